"""The compose topology, natively: a document sent through nginx reaches the
model (stored by a gateway, read by a worker, in the store compose.yaml gives
them), a streamed reply through nginx survives killing the gateway that serves
it, and every health check in compose.yaml passes as written (and the killed
gateway's fails)."""

import base64
import hashlib
import json
import os
import re
import time
import urllib.request

from sse import EventStream, Http
from topology import run_check

WORDS = 120
PROMPT = f"@mock.tokens {WORDS} @mock.delay 0 40"  # about 5 s of streaming
CUT_AFTER_TEXT_EVENTS = 8
DEADLINE_S = 60
NOTE = "Deploy check: the heron flew over the weir at dawn.\n"  # notes.md, the attachment


def attachment(topo, check):
    """One message with a small document, through nginx: the gateway that takes
    it writes the file to the store compose.yaml configures, a worker (another
    process, with its own container filesystem) reads the text back for the
    model, and the mock model's echo shows it did. Works only if every gateway
    and worker is given the same store: in compose, the shared volume."""
    token = topo.token
    edge = Http(topo.port("nginx"), token, timeout=DEADLINE_S)
    stores = {}
    for name in topo.services_of("serve") + topo.services_of("worker"):
        env = topo.plan.process(name)[1]
        # attachments.store, else its default <data_dir>/files (the image's WEFT_DATA_DIR).
        store = env.get("WEFT_ATTACHMENTS__STORE") or os.path.join(env.get("WEFT_DATA_DIR", "?"), "files")
        stores[name] = os.path.realpath(store)
    check(len(set(stores.values())) == 1,
          f"every gateway and worker uses the same attachment store, natively {sorted(set(stores.values()))}")

    session = edge.json("POST", "/v1/sessions", {})
    data = base64.b64encode(NOTE.encode()).decode()
    body = {"text": "summarise", "attachments": [{"name": "notes.md", "data": data}], "wait": True}
    conn, resp = edge.request("POST", f"/v1/sessions/{session['id']}/messages", body)
    raw = resp.read()
    conn.close()
    reply = json.loads(raw) if resp.status == 200 else {}
    check(resp.status == 200, f"a message with a document, through nginx, is answered: {resp.status} {raw[:200]!r}")
    content = reply.get("content") or ""
    check(NOTE.strip() in content and "notes.md" in content,
          f"the model was given the document's text, read by a worker from the store ({content[:120]!r}…)")
    sha = hashlib.sha256(NOTE.encode()).hexdigest()
    blob = os.path.join(next(iter(stores.values())), "blobs", sha[:2], sha)
    check(os.path.isfile(blob), f"the file is in that shared store ({blob})")


GATEWAY_METRICS = 9900  # --metrics-listen of the gateways in compose.yaml


def streams_active(metrics_port, token):
    """weft_sse_streams_active as the gateway itself reports it on its metrics
    port (absent until a gateway has served its first stream)."""
    conn, resp = Http(metrics_port, token).request("GET", "/metrics")
    body = resp.read().decode()
    conn.close()
    assert resp.status == 200, f"gateway /metrics: {resp.status}"
    values = re.findall(r"^weft_sse_streams_active(?:\{[^}]*\})? (\S+)$", body, re.M)
    return sum(float(v) for v in values)


def failover(topo, check):
    token = topo.token
    edge = Http(topo.port("nginx"), token)
    gateways = topo.services_of("serve")
    check(len(gateways) >= 2, f"compose.yaml runs {len(gateways)} gateways (want 2 or more)")
    check(edge.status("/metrics") == 404, "nginx keeps /metrics of the gateways off the edge")
    for g in gateways:
        check(Http(topo.port(g, 8900), token).status("/metrics") == 404,
              f"{g}'s API port answers 404 for /metrics (they are on --metrics-listen only)")

    session = edge.json("POST", "/v1/sessions", {})
    conn, resp = edge.request("POST", f"/v1/sessions/{session['id']}/messages", {"text": PROMPT, "stream": True})
    first = EventStream(conn, resp)
    events, texts = [], 0
    while texts < CUT_AFTER_TEXT_EVENTS:
        event = first.next()
        assert event is not None, "the stream through nginx ended before any reply"
        events.append(event)
        texts += event["type"] == "text"
    run_id = events[0]["run_id"]

    serving = [g for g in gateways if streams_active(topo.port(g, GATEWAY_METRICS), token) >= 1]
    check(len(serving) == 1, f"exactly one gateway serves the stream (by its /metrics): {serving}")
    victim = serving[0]
    survivor = next(g for g in gateways if g != victim)
    topo.children[victim].proc.kill()
    topo.children[victim].proc.wait()
    print(f"deploy: killed {victim} mid-reply after seq {events[-1]['seq']}", flush=True)

    while (event := first.next()) is not None:
        events.append(event)
    first.close()
    check(first.cut and events[-1]["type"] != "done", "the stream was cut mid-reply when its gateway died")

    conn, resp = edge.request("GET", f"/v1/runs/{run_id}/events", headers={"last-event-id": str(events[-1]["seq"])})
    again = EventStream(conn, resp)
    deadline = time.monotonic() + DEADLINE_S
    while events[-1]["type"] not in ("done", "error", "cancelled") and time.monotonic() < deadline:
        event = again.next()
        if event is None:
            break
        events.append(event)
    again.close()

    seqs = [e["seq"] for e in events]
    check(events[-1]["type"] == "done", f"the re-attached stream ends with done (last: {events[-1]['type']})")
    check(seqs == list(range(1, len(seqs) + 1)), f"seq 1..{len(seqs)}: no gap, no duplicate ({seqs[:3]}…{seqs[-3:]})")
    text = "".join(e["delta"] for e in events if e["type"] == "text")
    expected = " ".join(f"w{i}" for i in range(1, WORDS + 1))
    check(text.strip() == expected, f"the reply text is every word once, in order ({text[:40]!r}…)")
    messages = edge.json("GET", f"/v1/sessions/{session['id']}/messages")["messages"]
    stored = [m["content"] for m in messages if m["role"] == "assistant"]
    check(stored and stored[-1].strip() == text.strip(), "the stored reply equals what was streamed")
    # The access log names the upstream(s) tried, the one that answered last.
    # (nginx's error lines about the dead gateway name the request too: skip them)
    tried = [m.group(1).split(", ")
             for line in topo.children["nginx"].lines if f"/v1/runs/{run_id}/events" in line
             for m in [re.search(r"upstream=(.*) rt=", line)] if m]
    check(tried and tried[-1][-1] == f"127.0.0.1:{topo.port(survivor)}",
          f"nginx sent the re-attach to {survivor} (tried {tried[-1:] or 'nothing logged'})")
    return victim


def admin_token_placement(topo, check):
    """Only the gateways get the admin token; the workers run without it and the
    token still works after they started (a worker leaves it alone)."""
    for name in topo.plan.weft_services():
        env = topo.plan.process(name)[1]
        has = any(k.startswith("WEFT_ADMIN_TOKEN") for k in env)
        if name in topo.services_of("serve"):
            check(has, f"{name} is given the admin token")
        else:
            check(not has, f"{name} is not given the admin token")
    me = Http(topo.port("nginx"), topo.token).json("GET", "/v1/me")
    check(me.get("username") == "admin", f"the admin token works with the workers running: {me}")


def health_checks(topo, check, victim):
    """Every compose health check, run as written against the native processes."""
    for name in topo.order():
        argv = topo.plan.healthcheck(name)
        if argv is None:
            continue
        ok, out = run_check(argv)
        if name == victim:
            check(not ok, f"the health check of killed {name} fails: {' '.join(argv)}")
            continue
        check(ok, f"health check of {name} passes as written: {' '.join(argv)} {out}")
        # The web UI answers any unknown GET path with 200, so a probe of a
        # misspelt path would pass: the URL must answer like a health endpoint.
        for url in (a for a in argv if a.startswith("http://")):
            with urllib.request.urlopen(url, timeout=5) as resp:
                body = resp.read().decode(errors="replace")
            try:
                healthy = json.loads(body).get("status") in ("ok", "ready")
            except ValueError:
                healthy = body.strip() == "ok"
            check(healthy, f"{name} probes a health endpoint: {url} answers {body[:60]!r}")
