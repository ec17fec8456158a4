"""Check weft-loadtest's mock LLM server with the official `openai` Python SDK.

Run by loadtest/tests/sdk_check.rs as `python openai_check.py BASE_URL PROVIDER_BODY`,
where BASE_URL ends in /v1 and PROVIDER_BODY is a file holding the raw request body
Weft's own OpenAI provider sent (a conversation with images), to be checked against
the SDK's request types. Every check asserts what a real client would rely on; the
script exits non-zero on the first failure and prints "openai sdk: N checks passed".
"""

import base64
import copy
import hashlib
import json
import struct
import sys
import urllib.request
import zlib

import openai
from openai import OpenAI
from openai.types.chat import ChatCompletionUserMessageParam
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

from typecheck import conformance_problem

BASE = sys.argv[1]
PROVIDER_BODY = sys.argv[2]
client = OpenAI(base_url=BASE, api_key="sk-test", max_retries=0)
checks = 0

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def check(name, cond, detail=""):
    global checks
    if not cond:
        raise AssertionError(f"{name}: {detail}")
    checks += 1


def stream(messages, **kw):
    deltas, arg_events = [], []
    with client.chat.completions.stream(
        model="mock-model", messages=messages, stream_options={"include_usage": True}, **kw
    ) as s:
        for event in s:
            if event.type == "content.delta" and event.delta:
                deltas.append(event.delta)
            elif event.type == "tool_calls.function.arguments.done":
                arg_events.append((event.name, event.arguments))
        final = s.get_final_completion()
    return final, deltas, arg_events


# 1. Text, streamed token by token, with usage.
final, deltas, _ = stream([{"role": "user", "content": "@mock.reply Hello from the mock"}])
msg = final.choices[0].message
check("text content", msg.content == "Hello from the mock", repr(msg.content))
check("text deltas", deltas == ["Hello ", "from ", "the ", "mock"], repr(deltas))
check("text finish", final.choices[0].finish_reason == "stop", final.choices[0].finish_reason)
check("text usage", final.usage is not None and final.usage.completion_tokens == 4, repr(final.usage))

# 2. A fragmented tool call, its arguments assembled by the SDK.
ask = {"role": "user", "content": 'Paris? @mock.tool get_weather {"city": "Paris", "note": "a fairly long argument"}'}
final, _, arg_events = stream([ask], tools=[WEATHER])
choice = final.choices[0]
check("tool finish", choice.finish_reason == "tool_calls", choice.finish_reason)
calls = choice.message.tool_calls or []
check("one tool call", len(calls) == 1, repr(calls))
call = calls[0]
args = json.loads(call.function.arguments)
check("tool name", call.function.name == "get_weather", call.function.name)
check("tool args", args == {"city": "Paris", "note": "a fairly long argument"}, repr(args))
check("tool args event", arg_events and arg_events[0][0] == "get_weather", repr(arg_events))
check("tool id", call.id.startswith("call_"), call.id)

# 3. The tool result goes back; the mock reports it.
history = [
    ask,
    {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
    {"role": "tool", "tool_call_id": call.id, "content": "18C, cloudy"},
]
final, _, _ = stream(history, tools=[WEATHER])
reply = final.choices[0].message.content
check("tool result reply", reply == "tool get_weather said: 18C, cloudy", repr(reply))

# 4. Usage with cached and reasoning tokens; reasoning_content passes through.
convo = [
    {"role": "system", "content": "one two three"},
    {"role": "user", "content": "@mock.think 2 @mock.tokens 3"},
]
final, _, _ = stream(convo)
u = final.usage
check("prompt tokens", u.prompt_tokens == 7, repr(u))
check("cached tokens", u.prompt_tokens_details.cached_tokens == 3, repr(u))
check("reasoning tokens", u.completion_tokens_details.reasoning_tokens == 2, repr(u))
check("completion tokens", u.completion_tokens == 5 and u.total_tokens == 12, repr(u))
reasoning = ""
ids, created = set(), set()
for chunk in client.chat.completions.create(model="mock-model", messages=convo, stream=True):
    ids.add(chunk.id)
    created.add(chunk.created)
    if chunk.choices:
        reasoning += getattr(chunk.choices[0].delta, "reasoning_content", None) or ""
check("reasoning_content", reasoning == "t1 t2", repr(reasoning))
check("constant id and created", len(ids) == 1 and len(created) == 1, repr((ids, created)))

# 5. Non-streamed create.
done = client.chat.completions.create(model="mock-model", messages=[{"role": "user", "content": "hi"}])
check("create content", done.choices[0].message.content == "You said: hi", repr(done))
check("create usage", done.usage.completion_tokens == 3, repr(done.usage))
done = client.chat.completions.create(model="mock-model", messages=[ask], tools=[WEATHER])
check("create tool call", done.choices[0].message.tool_calls[0].function.name == "get_weather", repr(done))

# 6. Errors map to the SDK's exception classes; its own retries count as attempts.
try:
    client.chat.completions.create(model="mock-model", messages=[{"role": "user", "content": "@mock.fail 429"}])
    check("429 raises", False)
except openai.RateLimitError as e:
    check("429 body", e.body["message"] == "Rate limit reached for requests" and e.code == "rate_limit_exceeded", repr(e.body))
try:
    client.chat.completions.create(model="mock-model", messages=[])
    check("400 raises", False)
except openai.BadRequestError as e:
    check("400 body", e.code == "empty_array" and e.param == "messages", repr(e.body))
retrying = OpenAI(base_url=BASE, api_key="sk-test", max_retries=2)
done = retrying.chat.completions.create(
    model="mock-model", messages=[{"role": "user", "content": "@mock.fail 503 times=2 retry_after=0.01 @mock.reply ok"}]
)
check("sdk retries recover", done.choices[0].message.content == "ok", repr(done))


# 7. Images: the SDK sends image_url parts with data URLs; the mock decodes them and
#    `@mock.describe_images` says what arrived (size and SHA-256 of the bytes).
def png(width, height, rgb):
    """A real PNG, made here so the bytes do not come from the code under test."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


RED, BLUE = png(3, 2, (255, 0, 0)), png(5, 4, (0, 0, 255))


def described(*images):
    return "\n".join(
        f"image {i}: {mime}, {len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()}"
        for i, (mime, raw) in enumerate(images, 1)
    )


def image_part(raw, **extra):
    url = "data:image/png;base64," + base64.b64encode(raw).decode()
    return {"type": "image_url", "image_url": {"url": url, **extra}}


look = {"role": "user", "content": [
    {"type": "text", "text": "what are these? @mock.describe_images"},
    image_part(RED),
    image_part(BLUE, detail="low"),
]}
want = described(("image/png", RED), ("image/png", BLUE))
final, _, _ = stream([look])
check("streamed images described", final.choices[0].message.content == want, repr(final.choices[0].message.content))
done = client.chat.completions.create(model="mock-model", messages=[look])
check("created images described", done.choices[0].message.content == want, repr(done))
try:
    linked = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}
    client.chat.completions.create(model="mock-model", messages=[linked])
    check("a linked image is refused", False)
except openai.BadRequestError as e:
    check("linked image 400", "data URLs" in e.message, repr(e.body))

# 8. The request body Weft's OpenAI provider sent conforms to the SDK's own request
#    types (CompletionCreateParamsStreaming for the body, ChatCompletionUserMessageParam
#    for each user message), checked with pydantic; see typecheck.py.
ROOT = BASE.removesuffix("/v1")
stream([look])
sdk_body = json.load(urllib.request.urlopen(f"{ROOT}/last_request"))
problem = conformance_problem(CompletionCreateParamsStreaming, sdk_body)
check("the checker accepts the SDK's own body", problem is None, problem)

with open(PROVIDER_BODY) as f:
    ours = json.load(f)
problem = conformance_problem(CompletionCreateParamsStreaming, ours)
check("provider body is CompletionCreateParamsStreaming", problem is None, problem)
users = [m for m in ours["messages"] if m["role"] == "user"]
with_images = [m for m in users if isinstance(m["content"], list)]
check("provider sent image parts", len(with_images) >= 1, repr(users))
for m in users:
    problem = conformance_problem(ChatCompletionUserMessageParam, m)
    check("provider user message", problem is None, problem)
for m in with_images:
    for part in m["content"]:
        if part["type"] == "image_url":
            head, data = part["image_url"]["url"].split(",", 1)
            raw = base64.b64decode(data, validate=True)
            check("data URL header", head in ("data:image/png;base64", "data:image/gif;base64"), head)
            check("data URL bytes", raw[:4] in (b"\x89PNG", b"GIF8"), repr(raw[:8]))

# The checker can fail: a misspelt optional key and a wrong part type are refused.
broken = copy.deepcopy(with_images[0])
part = next(p for p in broken["content"] if p["type"] == "image_url")
part["image_url"]["detial"] = "low"
check("a misspelt key is refused", conformance_problem(ChatCompletionUserMessageParam, broken) is not None)
del part["image_url"]["detial"]
part["type"] = "image"
check("a wrong part type is refused", conformance_problem(ChatCompletionUserMessageParam, broken) is not None)

# Embeddings: the SDK's client (base64 by default, decoded by the SDK) and
# floats agree; texts that share words are nearer than unrelated ones.
def cosine(a, b):
    return sum(x * y for x, y in zip(a, b))

emb = client.embeddings.create(
    model="mock",
    input=["How do I reset my password?", "Resetting a forgotten password", "The cafeteria opens at noon"],
)
check("embeddings: one vector per input, in order", [d.index for d in emb.data] == [0, 1, 2], emb.data)
check("embeddings: 256 dimensions", all(len(d.embedding) == 256 for d in emb.data))
check("embeddings: unit length", all(abs(cosine(d.embedding, d.embedding) - 1) < 1e-4 for d in emb.data))
q, near, far = (d.embedding for d in emb.data)
check("embeddings: shared words are nearer", cosine(q, near) > 2 * cosine(q, far), (cosine(q, near), cosine(q, far)))
check("embeddings: usage counted", emb.usage.prompt_tokens > 0 and emb.usage.total_tokens == emb.usage.prompt_tokens, emb.usage)
floats = client.embeddings.create(model="mock", input="How do I reset my password?", encoding_format="float")
check("embeddings: float and base64 agree", max(abs(a - b) for a, b in zip(floats.data[0].embedding, q)) < 1e-6)
small = client.embeddings.create(model="mock", input="abc", dimensions=32)
check("embeddings: dimensions honoured", len(small.data[0].embedding) == 32)
try:
    client.embeddings.create(model="mock", input=[])
    check("embeddings: empty input refused", False)
except openai.BadRequestError as e:
    check("embeddings: empty input refused", e.status_code == 400, e)

print(f"openai sdk: {checks} checks passed")
