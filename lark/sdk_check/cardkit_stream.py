"""Official lark-oapi CardKit client against the fake Lark server.

Creates a streaming card entity, sends it by reference, streams an element's
text with increasing `sequence`, has a stale `sequence` refused, replaces the
whole card, ends streaming with a settings update, and has a stream after that
refused. Prints one line per step (`CREATED <card_id>`, `SENT <message_id>`,
`STREAMED <n>`, `STALE <code>`, `UPDATED`, `SETTLED`, `CLOSED <code>`); exits 1
with Lark's code and message when a step that should succeed does not.
"""
import json
import sys

try:
    import lark_oapi as lark
    from lark_oapi.api.cardkit.v1 import (
        Card,
        ContentCardElementRequest,
        ContentCardElementRequestBody,
        CreateCardRequest,
        CreateCardRequestBody,
        SettingsCardRequest,
        SettingsCardRequestBody,
        UpdateCardRequest,
        UpdateCardRequestBody,
    )
    from lark_oapi.api.im.v1 import CreateMessageRequest, CreateMessageRequestBody
except ImportError as e:
    print(f"LARK_OAPI_MISSING {e}", flush=True)
    sys.exit(3)

from fake_client import rest_client  # noqa: E402  (after the SDK check)


def card(text: str, streaming: bool) -> str:
    return json.dumps({
        "schema": "2.0",
        "config": {"update_multi": True, "streaming_mode": streaming},
        "header": {"title": {"tag": "plain_text", "content": "SDK"}, "template": "blue"},
        "body": {"elements": [{"tag": "markdown", "element_id": "md", "content": text}]},
    })


def must(response, what: str):
    if not response.success():
        print(f"{what}_FAILED {response.code} {response.msg}", flush=True)
        sys.exit(1)
    return response


client = rest_client(lark)

created = must(client.cardkit.v1.card.create(
    CreateCardRequest.builder()
    .request_body(CreateCardRequestBody.builder().type("card_json").data(card("", True)).build())
    .build()
), "CREATE")
card_id = created.data.card_id
print(f"CREATED {card_id}", flush=True)

sent = must(client.im.v1.message.create(
    CreateMessageRequest.builder()
    .receive_id_type("chat_id")
    .request_body(
        CreateMessageRequestBody.builder()
        .receive_id("oc_sdk_chat")
        .msg_type("interactive")
        .content(json.dumps({"type": "card", "data": {"card_id": card_id}}))
        .build()
    )
    .build()
), "SEND")
print(f"SENT {sent.data.message_id}", flush=True)


def stream(text: str, sequence: int, uuid: str = "sdk"):
    return client.cardkit.v1.card_element.content(
        ContentCardElementRequest.builder()
        .card_id(card_id)
        .element_id("md")
        .request_body(
            ContentCardElementRequestBody.builder()
            .content(text)
            .sequence(sequence)
            .uuid(f"{uuid}_{card_id}_{sequence}")
            .build()
        )
        .build()
    )


for n, text in enumerate(["Hel", "Hello", "Hello, world"], start=1):
    must(stream(text, n), "STREAM")
print("STREAMED 3", flush=True)
# A new uuid: the same one would be a repeat, done once already (a success).
stale = stream("Hello again", 2, "stale")
print(f"STALE {stale.code}", flush=True)

must(client.cardkit.v1.card.update(
    UpdateCardRequest.builder()
    .card_id(card_id)
    .request_body(
        UpdateCardRequestBody.builder()
        .card(Card.builder().type("card_json").data(card("Hello, world!", True)).build())
        .sequence(4)
        .build()
    )
    .build()
), "UPDATE")
print("UPDATED", flush=True)

must(client.cardkit.v1.card.settings(
    SettingsCardRequest.builder()
    .card_id(card_id)
    .request_body(
        SettingsCardRequestBody.builder()
        .settings(json.dumps({"config": {"streaming_mode": False}}))
        .sequence(5)
        .build()
    )
    .build()
), "SETTINGS")
print("SETTLED", flush=True)
closed = stream("too late", 6)
print(f"CLOSED {closed.code}", flush=True)
