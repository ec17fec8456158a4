"""Official lark-oapi REST client reading a message and a user's name from the fake.

Gets `LARK_MESSAGE_ID` with `im.v1.message.get` and prints
`MESSAGE <msg_type> <sender_type> <sender id> <content>`, then lists chat
`LARK_CHAT_ID` newest first one message a page with `im.v1.message.list` and
prints `LISTED <has_more> <message id> <sender id>` per page, then the user
`LARK_OPEN_ID` with `contact.v3.user.get` (user_id_type open_id) and prints
`USER <name>`, then asks again after the test took the contact scope away
(it waits for a line on stdin) and prints `DENIED <code>`.
"""
import os
import sys

try:
    import lark_oapi as lark
    from lark_oapi.api.contact.v3 import GetUserRequest
    from lark_oapi.api.im.v1 import GetMessageRequest, ListMessageRequest
except ImportError as e:
    print(f"LARK_OAPI_MISSING {e}", flush=True)
    sys.exit(3)

from fake_client import rest_client  # noqa: E402  (after the SDK check)


client = rest_client(lark)

got = client.im.v1.message.get(
    GetMessageRequest.builder().message_id(os.environ["LARK_MESSAGE_ID"]).build()
)
if not got.success():
    print(f"MESSAGE_FAILED {got.code} {got.msg}", flush=True)
    sys.exit(1)
item = got.data.items[0]
print(f"MESSAGE {item.msg_type} {item.sender.sender_type} {item.sender.id} {item.body.content}", flush=True)

token = None
while True:
    page = ListMessageRequest.builder().container_id_type("chat").container_id(
        os.environ["LARK_CHAT_ID"]
    ).sort_type("ByCreateTimeDesc").page_size(1)
    if token:
        page = page.page_token(token)
    listed = client.im.v1.message.list(page.build())
    if not listed.success():
        print(f"LIST_FAILED {listed.code} {listed.msg}", flush=True)
        sys.exit(1)
    for m in listed.data.items:
        print(f"LISTED {listed.data.has_more} {m.message_id} {m.sender.id}", flush=True)
    if not listed.data.has_more:
        break
    token = listed.data.page_token


def user():
    return client.contact.v3.user.get(
        GetUserRequest.builder().user_id(os.environ["LARK_OPEN_ID"]).user_id_type("open_id").build()
    )


named = user()
if not named.success():
    print(f"USER_FAILED {named.code} {named.msg}", flush=True)
    sys.exit(1)
print(f"USER {named.data.user.name}", flush=True)
sys.stdin.readline()
print(f"DENIED {user().code}", flush=True)
