"""Official lark-oapi websocket client against the fake Lark server.

Connects with `domain` pointed at the fake (discovery is `{domain}/callback/ws/endpoint`;
the socket URL comes from discovery), prints one line per received
im.message.receive_v1 event, and runs until the test kills it. The test checks the
fake's records to confirm that each ack was accepted.
"""
import json
import os
import sys

try:
    import lark_oapi as lark
except ImportError as e:  # the Rust test turns this into a clear failure
    print(f"LARK_OAPI_MISSING {e}", flush=True)
    sys.exit(3)


def on_message(data: "lark.im.v1.P2ImMessageReceiveV1") -> None:
    text = json.loads(data.event.message.content).get("text", "")
    print(f"RECEIVED {data.header.event_id} {len(text)}", flush=True)


handler = (
    lark.EventDispatcherHandler.builder("", "")
    .register_p2_im_message_receive_v1(on_message)
    .build()
)
client = lark.ws.Client(
    os.environ["LARK_APP_ID"],
    os.environ["LARK_APP_SECRET"],
    event_handler=handler,
    domain=os.environ["LARK_BASE_URL"],
    log_level=lark.LogLevel.DEBUG,
)
print("STARTING", flush=True)
client.start()
