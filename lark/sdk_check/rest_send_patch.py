"""Official lark-oapi REST client against the fake Lark server.

Obtains a tenant token (implicitly), sends an interactive card, and patches it.
Exits 0 and prints `SENT <message_id>` / `PATCHED` on success; exits 1 with the
Lark code and message otherwise.
"""
import json
import sys

try:
    import lark_oapi as lark
    from lark_oapi.api.im.v1 import (
        CreateMessageRequest,
        CreateMessageRequestBody,
        PatchMessageRequest,
        PatchMessageRequestBody,
    )
except ImportError as e:
    print(f"LARK_OAPI_MISSING {e}", flush=True)
    sys.exit(3)

from fake_client import rest_client  # noqa: E402  (after the SDK check)


def card(text: str) -> str:
    return json.dumps({
        "schema": "2.0",
        "config": {"update_multi": True},
        "header": {"title": {"tag": "plain_text", "content": "SDK"}, "template": "blue"},
        "body": {"elements": [{"tag": "markdown", "element_id": "md", "content": text}]},
    })


client = rest_client(lark)

sent = client.im.v1.message.create(
    CreateMessageRequest.builder()
    .receive_id_type("chat_id")
    .request_body(
        CreateMessageRequestBody.builder()
        .receive_id("oc_sdk_chat")
        .msg_type("interactive")
        .content(card("thinking"))
        .build()
    )
    .build()
)
if not sent.success():
    print(f"SEND_FAILED {sent.code} {sent.msg}", flush=True)
    sys.exit(1)
message_id = sent.data.message_id
print(f"SENT {message_id}", flush=True)

patched = client.im.v1.message.patch(
    PatchMessageRequest.builder()
    .message_id(message_id)
    .request_body(PatchMessageRequestBody.builder().content(card("done")).build())
    .build()
)
if not patched.success():
    print(f"PATCH_FAILED {patched.code} {patched.msg}", flush=True)
    sys.exit(1)
print("PATCHED", flush=True)
