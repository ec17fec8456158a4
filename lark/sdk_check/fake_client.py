"""The official lark-oapi REST client, pointed at the fake Lark the test started
(`LARK_BASE_URL`, with its app id and secret): shared by the REST scripts here."""
import os


def rest_client(lark):
    return (
        lark.Client.builder()
        .app_id(os.environ["LARK_APP_ID"])
        .app_secret(os.environ["LARK_APP_SECRET"])
        .domain(os.environ["LARK_BASE_URL"])
        .build()
    )
