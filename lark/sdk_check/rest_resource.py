"""Official lark-oapi REST client downloading message resources from the fake.

Downloads `LARK_MESSAGE_ID` / `LARK_FILE_KEY` as `LARK_RESOURCE_TYPE` with
`im.v1.message_resource.get` and prints `DOWNLOADED <hex of the bytes> <file_name>`,
then asks for a key the message does not have and prints `MISSING <code> <msg>`.
Exits 1 when the download fails.
"""
import os
import sys

try:
    import lark_oapi as lark
    from lark_oapi.api.im.v1 import GetMessageResourceRequest
except ImportError as e:
    print(f"LARK_OAPI_MISSING {e}", flush=True)
    sys.exit(3)

from fake_client import rest_client  # noqa: E402  (after the SDK check)


client = rest_client(lark)


def get(file_key: str):
    return client.im.v1.message_resource.get(
        GetMessageResourceRequest.builder()
        .message_id(os.environ["LARK_MESSAGE_ID"])
        .file_key(file_key)
        .type(os.environ["LARK_RESOURCE_TYPE"])
        .build()
    )


got = get(os.environ["LARK_FILE_KEY"])
if not got.success():
    print(f"DOWNLOAD_FAILED {got.code} {got.msg}", flush=True)
    sys.exit(1)
data = got.file.read()
print(f"DOWNLOADED {data.hex()} {got.file_name}", flush=True)

missing = get("file_not_in_this_message")
print(f"MISSING {missing.code} {missing.msg}", flush=True)
