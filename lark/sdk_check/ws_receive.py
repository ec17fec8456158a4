"""Official lark-oapi websocket client against the fake Lark server.

Connects with `domain` pointed at the fake (discovery is `{domain}/callback/ws/endpoint`;
the socket URL comes from discovery), prints one line per received
im.message.receive_v1 event, answers each card.action.trigger (a button click) with a
toast and a replacement card, and runs until the test kills it. The test checks the
fake's records to confirm that each ack was accepted and what the answers carried.
"""
import json
import os
import sys

try:
    import lark_oapi as lark
    from lark_oapi.event.callback.model.p2_card_action_trigger import (
        P2CardActionTrigger,
        P2CardActionTriggerResponse,
    )
except ImportError as e:  # the Rust test turns this into a clear failure
    print(f"LARK_OAPI_MISSING {e}", flush=True)
    sys.exit(3)


def on_message(data: "lark.im.v1.P2ImMessageReceiveV1") -> None:
    text = json.loads(data.event.message.content).get("text", "")
    print(f"RECEIVED {data.header.event_id} {len(text)}", flush=True)


def on_click(data: P2CardActionTrigger) -> P2CardActionTriggerResponse:
    event = data.event
    value = event.action.value or {}
    who = event.operator.open_id
    print(
        f"CLICKED {data.header.event_id} {who} {event.context.open_message_id} "
        f"{value.get('approval_id')} {value.get('decision')}",
        flush=True,
    )
    card = {
        "schema": "2.0",
        "config": {"update_multi": True},
        "body": {"elements": [{"tag": "markdown", "content": f"{value.get('decision')} by {who}"}]},
    }
    return P2CardActionTriggerResponse(
        {"toast": {"type": "success", "content": "recorded"}, "card": {"type": "raw", "data": card}}
    )


handler = (
    lark.EventDispatcherHandler.builder("", "")
    .register_p2_im_message_receive_v1(on_message)
    .register_p2_card_action_trigger(on_click)
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
