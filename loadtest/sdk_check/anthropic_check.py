"""Check weft-loadtest's mock LLM server with the official `anthropic` Python SDK.

Run by loadtest/tests/anthropic_sdk.rs as `python anthropic_check.py BASE_URL` (no
/v1: the SDK appends /v1/messages). Exits non-zero on the first failure and prints
"anthropic sdk: N checks passed".
"""

import sys

import anthropic
from anthropic import Anthropic

client = Anthropic(base_url=sys.argv[1], api_key="sk-ant-test", max_retries=0)
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
check("usage", final.usage.output_tokens == 4 and final.usage.input_tokens == 5 and final.usage.cache_read_input_tokens == 2, repr(final.usage))

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

# 4. Non-streamed create, cache reads reported apart from input.
msg = client.messages.create(
    model="claude-mock",
    max_tokens=64,
    system="one two three",
    messages=[{"role": "user", "content": "hi"}],
)
check("create text", msg.content[0].text == "You said: hi", repr(msg))
check("create cache", msg.usage.cache_read_input_tokens == 3 and msg.usage.input_tokens == 1, repr(msg.usage))

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

print(f"anthropic sdk: {checks} checks passed")
