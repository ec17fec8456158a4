"""Check weft-loadtest's mock LLM server with the official `anthropic` Python SDK.

Run by loadtest/tests/sdk_check.rs as `python anthropic_check.py BASE_URL
PROVIDER_BODY` (BASE_URL without /v1: the SDK appends /v1/messages; PROVIDER_BODY is
a file holding the raw request body Weft's own Anthropic provider sent, a
conversation with images, to be checked against the SDK's request types). Exits
non-zero on the first failure and prints "anthropic sdk: N checks passed".
"""

import base64
import copy
import hashlib
import json
import struct
import sys
import urllib.request
import zlib

import anthropic
from anthropic import Anthropic
from anthropic.types import MessageParam
from anthropic.types.message_create_params import MessageCreateParamsStreaming

from typecheck import conformance_problem

BASE = sys.argv[1]
PROVIDER_BODY = sys.argv[2]
client = Anthropic(base_url=BASE, api_key="sk-ant-test", max_retries=0)
checks = 0

WEATHER = {
    "name": "get_weather",
    "description": "Current weather",
    "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
}


def check(name, cond, detail=""):
    global checks
    if not cond:
        raise AssertionError(f"{name}: {detail}")
    checks += 1


def stream(messages, **kw):
    with client.messages.stream(model="claude-mock", max_tokens=256, messages=messages, **kw) as s:
        texts = list(s.text_stream)
        final = s.get_final_message()
    return final, texts


# 1. Thinking then text, streamed, with usage.
final, texts = stream([{"role": "user", "content": "@mock.think 2 @mock.reply Hello there"}], system="Be brief.")
kinds = [b.type for b in final.content]
check("block kinds", kinds == ["thinking", "text"], repr(kinds))
check("thinking text", final.content[0].thinking == "t1 t2", repr(final.content[0]))
check("signature", bool(final.content[0].signature), repr(final.content[0]))
check("text", final.content[1].text == "Hello there", repr(final.content[1]))
check("text stream", texts == ["Hello ", "there"], repr(texts))
check("stop reason", final.stop_reason == "end_turn", final.stop_reason)
check("usage", final.usage.output_tokens == 4 and final.usage.input_tokens == 7 and final.usage.cache_read_input_tokens == 0, repr(final.usage))

# 2. Tool use with input_json_delta pieces assembled by the SDK.
ask = {"role": "user", "content": '@mock.tool get_weather {"location": "Paris, France", "unit": "celsius"}'}
final, _ = stream([ask], tools=[WEATHER])
uses = [b for b in final.content if b.type == "tool_use"]
check("one tool_use", len(uses) == 1, repr(final.content))
check("tool input", uses[0].input == {"location": "Paris, France", "unit": "celsius"}, repr(uses[0].input))
check("tool stop", final.stop_reason == "tool_use", final.stop_reason)

# 3. Tool result back; the mock reports it.
history = [
    ask,
    {"role": "assistant", "content": [u.model_dump() for u in uses]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": "18C"}]},
]
final, _ = stream(history, tools=[WEATHER])
check("tool result reply", final.content[0].text == "tool get_weather said: 18C", repr(final.content))

# 3b. Extended thinking over a tool step: the SDK's own blocks, sent back as they came,
#     are accepted; without the thinking block, or with its text changed, the mock
#     answers 400 as the API does.
think_ask = {"role": "user", "content": '@mock.think 3 @mock.tool get_weather {"location": "Paris"}'}
thinking = {"type": "enabled", "budget_tokens": 1024}
with client.messages.stream(model="claude-mock", max_tokens=2048, thinking=thinking, tools=[WEATHER], messages=[think_ask]) as s:
    thought = s.get_final_message()
kinds = [b.type for b in thought.content]
check("thinking then tool_use", kinds == ["thinking", "tool_use"], repr(kinds))
check("thinking text streamed", thought.content[0].thinking == "t1 t2 t3", repr(thought.content[0]))
use = thought.content[1]
result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "18C"}]}


def after_tool(assistant_blocks):
    history = [think_ask, {"role": "assistant", "content": assistant_blocks}, result]
    return client.messages.create(model="claude-mock", max_tokens=2048, thinking=thinking, tools=[WEATHER], messages=history)


answered = after_tool([b.model_dump() for b in thought.content])
check("the signed block is accepted", answered.content[-1].text == "tool get_weather said: 18C", repr(answered.content))
try:
    after_tool([use.model_dump()])
    check("a tool turn without its thinking is refused", False)
except anthropic.BadRequestError as e:
    check("missing thinking 400", "must start with a thinking block" in e.body["error"]["message"], repr(e.body))
forged = thought.content[0].model_dump()
forged["thinking"] = "something else"
try:
    after_tool([forged, use.model_dump()])
    check("a changed thinking block is refused", False)
except anthropic.BadRequestError as e:
    check("invalid signature 400", "Invalid `signature`" in e.body["error"]["message"], repr(e.body))
try:
    client.messages.create(model="claude-mock", max_tokens=1024, thinking=thinking, messages=[think_ask])
    check("max_tokens at the budget is refused", False)
except anthropic.BadRequestError as e:
    check("budget 400", "budget_tokens" in e.body["error"]["message"], repr(e.body))

# 4. Non-streamed create, cache reads reported apart from input.
msg = client.messages.create(
    model="claude-mock",
    max_tokens=64,
    system="one two three",
    messages=[{"role": "user", "content": "hi"}],
)
check("create text", msg.content[0].text == "You said: hi", repr(msg))
check("no breakpoint, no cache", msg.usage.cache_read_input_tokens == 0 and msg.usage.input_tokens == 4, repr(msg.usage))

# 4b. Prompt caching follows the cache_control breakpoints: the first request writes
#     its prefix, the same prefix again is read, and a longer conversation reads the
#     earlier end by looking back; a fifth breakpoint is refused.
EPH = {"type": "ephemeral"}
system = [{"type": "text", "text": "You answer in one line, always politely.", "cache_control": EPH}]
turn1 = {"role": "user", "content": [{"type": "text", "text": "first question here", "cache_control": EPH}]}
a = client.messages.create(model="claude-mock", max_tokens=64, system=system, messages=[turn1])
check("a new prefix is written", a.usage.cache_creation_input_tokens == 10 and a.usage.cache_read_input_tokens == 0 and a.usage.input_tokens == 0, repr(a.usage))
b = client.messages.create(model="claude-mock", max_tokens=64, system=system, messages=[turn1])
check("the same prefix is read", b.usage.cache_read_input_tokens == 10 and b.usage.cache_creation_input_tokens == 0, repr(b.usage))
plain1 = {"role": "user", "content": [{"type": "text", "text": "first question here"}]}
turn2 = {"role": "user", "content": [{"type": "text", "text": "and a second one", "cache_control": EPH}]}
c = client.messages.create(model="claude-mock", max_tokens=64, system=system, messages=[plain1, {"role": "assistant", "content": "ok then"}, turn2])
check("a longer prompt reads the earlier end", c.usage.cache_read_input_tokens == 10 and c.usage.cache_creation_input_tokens == 6 and c.usage.input_tokens == 0, repr(c.usage))
many = {"role": "user", "content": [{"type": "text", "text": f"part {i}", "cache_control": EPH} for i in range(4)]}
try:
    client.messages.create(model="claude-mock", max_tokens=64, system=system, messages=[many])
    check("a fifth breakpoint is refused", False)
except anthropic.BadRequestError as e:
    check("five breakpoints 400", "maximum of 4 blocks with cache_control" in e.body["error"]["message"], repr(e.body))

# 5. Mid-stream overloaded_error after HTTP 200 raises, as documented.
try:
    stream([{"role": "user", "content": "@mock.tokens 5 @mock.fail 529 after=2"}])
    check("mid-stream error raises", False)
except anthropic.APIStatusError as e:
    check("overloaded mid-stream", "overloaded_error" in str(e.body) or "Overloaded" in str(e), repr(e))

# 6. Status errors map to the SDK's classes.
try:
    client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "@mock.fail 429"}])
    check("429 raises", False)
except anthropic.RateLimitError as e:
    check("429 type", e.body["error"]["type"] == "rate_limit_error", repr(e.body))
try:
    client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "@mock.fail 529"}])
    check("529 raises", False)
except anthropic.APIStatusError as e:
    check("529 status", e.status_code == 529 and e.body["error"]["type"] == "overloaded_error", repr(e.body))


# 7. Images: the SDK sends image blocks with a base64 source; the mock decodes them
#    and `@mock.describe_images` says what arrived (size and SHA-256 of the bytes).
def png(width, height, rgb):
    """A real PNG, made here so the bytes do not come from the code under test."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


RED, BLUE = png(3, 2, (255, 0, 0)), png(5, 4, (0, 0, 255))


def image_block(raw):
    data = base64.b64encode(raw).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def described(*images):
    return "\n".join(
        f"image {i}: image/png, {len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()}"
        for i, raw in enumerate(images, 1)
    )


look = {"role": "user", "content": [
    image_block(RED),
    image_block(BLUE),
    {"type": "text", "text": "what are these? @mock.describe_images"},
]}
final, _ = stream([look])
check("streamed images described", final.content[0].text == described(RED, BLUE), repr(final.content))
msg = client.messages.create(model="claude-mock", max_tokens=256, messages=[look])
check("created images described", msg.content[0].text == described(RED, BLUE), repr(msg))
try:
    linked = {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}
    client.messages.create(model="claude-mock", max_tokens=8, messages=[linked])
    check("a linked image is refused", False)
except anthropic.BadRequestError as e:
    check("linked image 400", e.body["error"]["type"] == "invalid_request_error", repr(e.body))

# 8. The request body Weft's Anthropic provider sent conforms to the SDK's own request
#    types (MessageCreateParamsStreaming for the body, MessageParam for each message),
#    checked with pydantic; see typecheck.py.
stream([look])
sdk_body = json.load(urllib.request.urlopen(f"{BASE}/last_request"))
problem = conformance_problem(MessageCreateParamsStreaming, sdk_body)
check("the checker accepts the SDK's own body", problem is None, problem)

with open(PROVIDER_BODY) as f:
    ours = json.load(f)
problem = conformance_problem(MessageCreateParamsStreaming, ours)
check("provider body is MessageCreateParamsStreaming", problem is None, problem)
for m in ours["messages"]:
    problem = conformance_problem(MessageParam, m)
    check("provider message", problem is None, problem)
images = [b for m in ours["messages"] for b in m["content"] if b["type"] == "image"]
check("provider sent image blocks", len(images) >= 1, repr(ours["messages"]))
for block in images:
    raw = base64.b64decode(block["source"]["data"], validate=True)
    check("image media type", block["source"]["media_type"] in ("image/png", "image/gif"), repr(block["source"]))
    check("image bytes", raw[:4] in (b"\x89PNG", b"GIF8"), repr(raw[:8]))
last = ours["messages"][-1]["content"]
kinds = [b["type"] for b in last]
check("tool results first, images before their text", kinds == ["tool_result", "image", "image", "text"], repr(kinds))
check("provider asks for thinking", ours.get("thinking") == {"type": "enabled", "budget_tokens": 1024}, repr(ours.get("thinking")))
tool_turn = next(m["content"] for m in ours["messages"] if any(b["type"] == "tool_use" for b in m["content"]))
check("the tool turn opens with its signed thinking", tool_turn[0]["type"] == "thinking" and tool_turn[0]["signature"], repr(tool_turn))
check("provider caches the system prompt", ours["system"][0].get("cache_control") == EPH, repr(ours["system"]))
marked = [b for m in ours["messages"] for b in m["content"] if "cache_control" in b]
check("provider caches up to the newest block", marked == [last[-1]], repr(marked))

# The checker can fail: a misspelt optional key and an unsupported media type are refused.
broken = copy.deepcopy(ours["messages"][0])
block = next(b for b in broken["content"] if b["type"] == "image")
block["cache_contorl"] = {"type": "ephemeral"}
check("a misspelt key is refused", conformance_problem(MessageParam, broken) is not None)
del block["cache_contorl"]
block["source"]["media_type"] = "image/bmp"
check("an unsupported media type is refused", conformance_problem(MessageParam, broken) is not None)

print(f"anthropic sdk: {checks} checks passed")
