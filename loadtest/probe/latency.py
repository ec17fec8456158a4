#!/usr/bin/env python3
"""Measures Weft's per-run overheads against a running gateway (stdlib only).

  time to first event: POST /v1/sessions/{id}/messages (stream: true) -> first SSE
                       event (run_started) at the client
  time to first token: same, to the first `text` event (mock model, no delay)
  enqueue -> claim:    the gateway's `weft_queue_wait_seconds` histogram (/metrics),
                       i.e. from the job being enqueued to the worker picking it up

usage: latency.py BASE_URL TOKEN [N]   (sequential runs, one session each)
"""
import http.client, json, statistics, sys, time, urllib.parse

base, token = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
u = urllib.parse.urlparse(base)
hdr = {"authorization": f"Bearer {token}", "content-type": "application/json"}


def call(method, path, body=None):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request(method, path, json.dumps(body) if body is not None else None, hdr)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def one():
    _, s = call("POST", "/v1/sessions", {})
    sid = json.loads(s)["id"]
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    t0 = time.perf_counter()
    c.request("POST", f"/v1/sessions/{sid}/messages", json.dumps({"text": "@mock.tokens 10", "stream": True}), hdr)
    r = c.getresponse()
    first = text = None
    for line in r:
        if line.startswith(b"event: "):
            now = time.perf_counter()
            if first is None:
                first = now - t0
            if line.strip() == b"event: text" and text is None:
                text = now - t0
            if line.strip() in (b"event: done", b"event: error", b"event: cancelled"):
                break
    c.close()
    return first * 1000, text * 1000


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


for _ in range(10):  # warm-up
    one()
firsts, texts = [], []
for _ in range(n):
    f, t = one()
    firsts.append(f)
    texts.append(t)
_, metrics = call("GET", "/metrics")
wait_sum = wait_count = None
for line in metrics.decode().splitlines():
    if line.startswith("weft_queue_wait_seconds_sum"):
        wait_sum = float(line.split()[-1])
    if line.startswith("weft_queue_wait_seconds_count"):
        wait_count = float(line.split()[-1])
out = {
    "runs": n,
    "first_event_ms": {"p50": pct(firsts, 50), "p90": pct(firsts, 90), "p99": pct(firsts, 99), "mean": statistics.mean(firsts)},
    "first_text_ms": {"p50": pct(texts, 50), "p90": pct(texts, 90), "p99": pct(texts, 99)},
    "enqueue_to_claim_mean_ms": (wait_sum / wait_count * 1000) if wait_count else None,
}
print(json.dumps(out, indent=2))
