#!/usr/bin/env python3
"""deploy/compose.yaml under a real container engine (deploy/tests/engine.sh
runs this after building the image and the stand-in images).

The files are used as they are: compose reads deploy/compose.yaml with an env
file made from deploy/.env.example (the published ports moved to free
127.0.0.1 ports) and the secret files deploy/make-secrets writes. What is
checked, as a user would notice: the image runs `weft --version`, as 65532 with a read-only root where compose
says so; `up --wait` brings migrate, 2 gateways, 2 workers, nginx, Postgres and
Redis to healthy; a document sent through nginx reaches the model; a reply
streamed through nginx survives `docker kill` of the gateway serving it (every
event once, in order, after re-attaching through nginx); `down` then `up` keeps
sessions and files; the observability profile comes up and a chat turn's trace
reaches the trace store behind the collector. Nothing leaves the compose
networks (a DROP rule of engine.sh counts what tries).

Usage: engine_test.py   (environment: DOCKER, COMPOSE, WEFT_IMAGE, ENGINE_REPORT)
Prints ok/FAIL per check and ends with "N passed, N failed".
"""

import base64
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from compose_native import make_secrets  # noqa: E402
from sse import EventStream, Http  # noqa: E402

DEPLOY = os.path.dirname(os.path.dirname(HERE))
DOCKER = os.environ.get("DOCKER", "docker")
COMPOSE_BIN = os.environ.get("COMPOSE", "docker-compose")
IMAGE = os.environ.get("WEFT_IMAGE", "weft:local")
PROJECT = "weft-engine-test"
UP_TIMEOUT_S = 240
WORDS = 120
PROMPT = f"@mock.tokens {WORDS} @mock.delay 0 40"  # about 5 s of streaming
CUT_AFTER_TEXT_EVENTS = 8
NOTE = "Engine check: the heron flew over the weir at dawn.\n"
POOL_PER_PROCESS = 32  # database_max_connections' default (config/src)


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
        return ok


def run(argv, check=True, timeout=600, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    return r


def docker(*args, **kw):
    return run([DOCKER, *args], **kw)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stack:
    """One compose project of deploy/compose.yaml, driven by the compose CLI."""

    def __init__(self, workdir):
        self.env_file = os.path.join(workdir, ".env")
        # What the operator does: ./make-secrets (here into the run's own
        # directory, named by WEFT_SECRETS_DIR) and .env from .env.example.
        secret_files = os.path.join(workdir, "secrets")
        self.token = make_secrets(secret_files)["weft_admin_token"]
        self.port = free_port()
        self.jaeger_port = free_port()
        with open(os.path.join(DEPLOY, ".env.example")) as f:
            example = f.read()
        with open(self.env_file, "w") as f:
            f.write(example)
            f.write(f"\nWEFT_SECRETS_DIR={secret_files}\n")
            f.write(f"WEFT_PUBLISH=127.0.0.1:{self.port}\nWEFT_JAEGER_PUBLISH=127.0.0.1:{self.jaeger_port}\n")
            f.write(f"WEFT_IMAGE={IMAGE}\n")
        self.files = [os.path.join(DEPLOY, "compose.yaml")]

    def compose(self, *args, env=None, timeout=600, check=True):
        files = [a for path in self.files for a in ("-f", path)]
        argv = [COMPOSE_BIN, "--project-directory", DEPLOY, *files,
                "--env-file", self.env_file, "-p", PROJECT, *args]
        return run(argv, timeout=timeout, check=check, env={**os.environ, **(env or {})})

    def up(self, *extra, env=None):
        start = time.monotonic()
        self.compose(*extra, "up", "-d", "--no-build", "--wait", "--wait-timeout", str(UP_TIMEOUT_S),
                     env=env, timeout=UP_TIMEOUT_S + 60)
        return time.monotonic() - start

    def containers(self, running=False):
        """service -> container id, of every container of the project (or the running ones)."""
        out = docker("ps", *([] if running else ["-a"]), "--filter", f"label=com.docker.compose.project={PROJECT}",
                     "--format", '{{.ID}} {{.Label "com.docker.compose.service"}}').stdout
        return {svc: cid for cid, svc in (line.split() for line in out.splitlines() if line.strip())}

    def inspect(self, service):
        return json.loads(docker("inspect", self.containers()[service]).stdout)[0]

    def exec(self, service, *argv, check=True):
        return docker("exec", self.containers()[service], *argv, check=check, timeout=60)

    def edge(self, timeout=60):
        return Http(self.port, self.token, timeout=timeout)

    def services(self):
        return json.loads(self.compose("config", "--format", "json").stdout)["services"]


def image_checks(check):
    info = json.loads(docker("image", "inspect", IMAGE).stdout)[0]
    check(info["Config"]["User"] in ("65532", "65532:65532"), f"the image runs as 65532 (USER {info['Config']['User']})")
    r = docker("run", "--rm", "--read-only", "--security-opt", "no-new-privileges:true", IMAGE, "--version", check=False)
    check(r.returncode == 0 and r.stdout.startswith("weft "),
          f"`weft --version` in the image, read-only root: {r.stdout.strip() or r.stderr.strip()[-200:]}")
    r = docker("run", "--rm", "--entrypoint", "sh", IMAGE, "-c", "true", check=False)
    check(r.returncode != 0, "the runtime has no shell (distroless)")
    return info["Size"]


def stack_healthy(stack, check, phase):
    services = stack.services()
    want = {n for n, s in services.items() if n != "migrate"}
    for name in sorted(want):
        state = stack.inspect(name)["State"]
        health = (state.get("Health") or {}).get("Status", "none")
        expect = "none" if (services[name].get("healthcheck") or {}).get("disable") else "healthy"
        check(state["Running"] and health == expect, f"{phase}: {name} is running, health {health}")
    migrate = stack.inspect("migrate")["State"]
    check(migrate["Status"] == "exited" and migrate["ExitCode"] == 0, f"{phase}: migrate ran once and exited 0")


def confinement(stack, check):
    """Every Weft service as compose.yaml says: user 65532, read-only root, its
    volumes writable, no new privileges."""
    services = stack.services()
    weft = [n for n, s in services.items() if s.get("image") == IMAGE and n != "migrate" and not s.get("profiles")]
    for name in weft:
        info = stack.inspect(name)
        # The container's pid 1 is docker-init (init: true), weft its child.
        init = info["State"]["Pid"]
        uids = {pid: status_field(pid, "Uid") for pid in [init] + children_of(init)}
        names = {pid: status_field(pid, "Name") for pid in uids}
        weft_uid = next((uid for pid, uid in uids.items() if names[pid] == "weft"), None)
        check(weft_uid == "65532", f"{name}: the weft process runs as uid {weft_uid} ({names})")
        check(info["HostConfig"]["ReadonlyRootfs"] is True, f"{name}: read-only root filesystem")
    name = weft[0]
    r = stack.exec(name, "wget", "-q", "-O", "/probe", "http://127.0.0.1:8900/health", check=False)
    check(r.returncode != 0, f"{name}: writing to / fails ({(r.stderr or r.stdout).strip()[:80]})")
    r = stack.exec(name, "wget", "-q", "-O", "/var/lib/weft/files/.probe", "http://127.0.0.1:8900/health", check=False)
    check(r.returncode == 0, f"{name}: the weft-files volume is writable by 65532")


def status_field(pid, field):
    with open(f"/proc/{pid}/status") as f:
        return re.search(rf"^{field}:\s+(\S+)", f.read(), re.M).group(1)


def children_of(parent):
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if status_field(pid, "PPid") == str(parent):
                out.append(int(pid))
        except (OSError, AttributeError):
            pass
    return out


def pool_fits(stack, check):
    services = stack.services()
    processes = [n for n, s in services.items() if s.get("image") == IMAGE and n != "migrate" and not s.get("profiles")]
    out = stack.exec("postgres", "psql", "-U", "weft", "-d", "weft", "-tAc", "show max_connections").stdout.strip()
    pools = {}
    for n in processes:
        env = services[n].get("environment") or {}
        pools[n] = int(env.get("WEFT_DATABASE_MAX_CONNECTIONS") or POOL_PER_PROCESS)
    need = sum(pools.values())
    check(int(out) > need, f"Postgres max_connections {out} > {len(processes)} processes' pools ({need})")


def attachment(stack, check):
    edge = stack.edge()
    session = edge.json("POST", "/v1/sessions", {})
    data = base64.b64encode(NOTE.encode()).decode()
    body = {"text": "summarise", "attachments": [{"name": "notes.md", "data": data}], "wait": True}
    conn, resp = edge.request("POST", f"/v1/sessions/{session['id']}/messages", body)
    raw = resp.read()
    conn.close()
    reply = json.loads(raw) if resp.status == 200 else {}
    content = reply.get("content") or ""
    check(resp.status == 200 and NOTE.strip() in content,
          f"a document sent through nginx reaches the model (a worker read it from weft-files): {resp.status} {content[:80]!r}")
    return session["id"]


def metrics_streams(stack, gateway):
    out = stack.exec(gateway, "wget", "-q", "-O", "-", "http://127.0.0.1:9900/metrics").stdout
    return sum(float(v) for v in re.findall(r"^weft_sse_streams_active(?:\{[^}]*\})? (\S+)$", out, re.M))


def failover(stack, check):
    edge = Http(stack.port, stack.token, timeout=30)
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
    gateways = sorted(n for n in stack.services() if n.startswith("gateway"))
    serving = [g for g in gateways if metrics_streams(stack, g) >= 1]
    check(len(serving) == 1, f"exactly one gateway serves the stream (by its /metrics): {serving}")
    victim = serving[0]
    survivor = next(g for g in gateways if g != victim)
    docker("kill", stack.containers()[victim])
    print(f"engine: docker kill {victim} mid-reply after seq {events[-1]['seq']}", flush=True)
    while (event := first.next()) is not None:
        events.append(event)
    first.close()
    check(first.cut and events[-1]["type"] != "done", "the stream was cut mid-reply when its gateway died")

    conn, resp = edge.request("GET", f"/v1/runs/{run_id}/events", headers={"last-event-id": str(events[-1]["seq"])})
    again = EventStream(conn, resp)
    deadline = time.monotonic() + 60
    while events[-1]["type"] not in ("done", "error", "cancelled") and time.monotonic() < deadline:
        event = again.next()
        if event is None:
            break
        events.append(event)
    again.close()
    seqs = [e["seq"] for e in events]
    check(events[-1]["type"] == "done", f"the re-attached stream ends with done (last: {events[-1]['type']})")
    check(seqs == list(range(1, len(seqs) + 1)), f"seq 1..{len(seqs)}: no gap, no duplicate")
    text = "".join(e["delta"] for e in events if e["type"] == "text")
    expected = " ".join(f"w{i}" for i in range(1, WORDS + 1))
    check(text.strip() == expected, f"the reply is every word once, in order ({text[:30]!r}…)")
    stored = [m["content"] for m in edge.json("GET", f"/v1/sessions/{session['id']}/messages")["messages"]
              if m["role"] == "assistant"]
    check(stored and stored[-1].strip() == text.strip(), "the stored reply equals what was streamed")
    # The access log names the upstreams tried for the re-attach, the one that
    # answered last. The killed gateway comes back (restart: unless-stopped),
    # at the same address, but not within the few milliseconds before the
    # client re-attaches: the answer is the survivor's.
    survivor_ip = stack.inspect(survivor)["NetworkSettings"]["Networks"][f"{PROJECT}_edge"]["IPAddress"]
    logs = docker("logs", stack.containers()["nginx"]).stdout
    tried = [m.group(1).split(", ") for line in logs.splitlines() if f"/v1/runs/{run_id}/events" in line
             for m in [re.search(r"upstream=(.*) rt=", line)] if m]
    check(tried and tried[-1][-1] == f"{survivor_ip}:8900",
          f"nginx sent the re-attach to {survivor} ({survivor_ip}:8900; tried {tried[-1:] or 'nothing logged'})")
    # Docker counts `docker kill` as stopping the container by hand, so its
    # restart policy leaves it stopped (a crash of weft inside would restart
    # it): start it again, as an operator would, before going on.
    docker("start", stack.containers()[victim])
    back = wait_healthy(stack, victim)
    state = stack.inspect(victim)["State"]
    check(back, f"{victim}, started again after the kill, is healthy: "
                f"{state['Status']}, health {(state.get('Health') or {}).get('Status')}")
    return session["id"]


def wait_healthy(stack, service, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = stack.inspect(service)["State"]
        if state["Running"] and (state.get("Health") or {}).get("Status") == "healthy":
            return True
        time.sleep(1)
    return False


def persisted(stack, check, sessions):
    edge = stack.edge()
    for sid in sessions:
        messages = edge.json("GET", f"/v1/sessions/{sid}/messages")["messages"]
        check(any(m["role"] == "assistant" for m in messages), f"session {sid[:8]}… and its reply are still there")
        for m in messages:
            for a in m.get("attachments") or []:
                conn, resp = edge.request("GET", f"/v1/files/{a['id']}")
                body = resp.read()
                conn.close()
                check(resp.status == 200 and body == NOTE.encode(), f"its file {a['name']} still reads back ({resp.status})")


def memory(stack):
    """service -> (docker stats' MEM USAGE, the RSS of the container's processes
    in MiB), one `docker stats` per container."""
    out = {}
    for service, cid in sorted(stack.containers(running=True).items()):
        r = docker("stats", "--no-stream", "--format", "{{.MemUsage}}", cid, check=False)
        usage = r.stdout.strip().split(" / ")[0] if r.returncode == 0 and r.stdout.strip() else "n/a"
        pid = stack.inspect(service)["State"]["Pid"]
        rss_kb = 0
        for p in [pid] + descendants_of(pid):
            try:
                rss_kb += int(status_field(p, "VmRSS"))
            except (OSError, AttributeError, ValueError):
                pass
        out[service] = {"docker_stats": usage, "rss_mib": round(rss_kb / 1024, 1)}
    return out


def descendants_of(parent):
    out, todo = [], [parent]
    while todo:
        kids = children_of(todo.pop())
        out += kids
        todo += kids
    return out


def observability(stack, check):
    """The profile's services come up; the gateways and workers, given the
    collector's endpoint, send a chat turn's spans through it to the store."""
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector:4318"}
    seconds = stack.up("--profile", "observability", env=env)
    print(f"engine: observability profile up in {seconds:.0f} s", flush=True)
    for name in ("otel-collector", "jaeger"):
        check(stack.inspect(name)["State"]["Running"], f"observability: {name} is running")
    check(wait_healthy(stack, "jaeger", 60), "observability: jaeger is healthy (its compose health check)")
    edge = stack.edge()
    session = edge.json("POST", "/v1/sessions", {})
    edge.json("POST", f"/v1/sessions/{session['id']}/messages", {"text": "@mock.tokens 3", "wait": True})
    api = Http(stack.jaeger_port, "", timeout=10)
    found, deadline = [], time.monotonic() + 60
    while time.monotonic() < deadline:
        found = (api.json("GET", "/api/services") or {}).get("data") or []
        if {"weft-gateway", "weft-worker"} <= set(found):
            break
        time.sleep(2)
    check({"weft-gateway", "weft-worker"} <= set(found),
          f"observability: spans of weft-gateway and weft-worker reached Jaeger through the collector: {found}")


def egress_dropped():
    out = run(["iptables", "-L", "DOCKER-USER", "-v", "-x", "-n"], check=False).stdout
    for line in out.splitlines():
        if "DROP" in line and "br-+" in line:
            return int(line.split()[0])
    return None


def main():
    check = Results()
    report = {}
    dropped_before = egress_dropped()
    print("engine: the image", flush=True)
    report["image_bytes"] = image_checks(check)
    with tempfile.TemporaryDirectory(prefix="weft-engine-") as work:
        stack = Stack(work)
        # What a run that was stopped half-way left behind.
        stack.compose("--profile", "observability", "down", "-v", "--remove-orphans", check=False, timeout=180)
        try:
            print("engine: compose up (fresh volumes)", flush=True)
            report["cold_start_s"] = round(stack.up(), 1)
            print(f"engine: healthy {report['cold_start_s']} s after `up`", flush=True)
            stack_healthy(stack, check, "cold start")
            confinement(stack, check)
            pool_fits(stack, check)
            sessions = [attachment(stack, check), failover(stack, check)]
            time.sleep(10)  # idle: nothing streaming, the health checks ticking
            report["idle_memory"] = memory(stack)
            print("engine: compose down, then up", flush=True)
            stack.compose("down", timeout=120)
            report["warm_start_s"] = round(stack.up(), 1)
            stack_healthy(stack, check, "after down + up")
            persisted(stack, check, sessions)
            if os.environ.get("ENGINE_OBSERVABILITY", "1") == "1":
                observability(stack, check)
        except BaseException:
            for name, cid in stack.containers().items():
                tail = docker("logs", "--tail", "15", cid, check=False)
                print(f"--- {name}\n{tail.stdout}{tail.stderr}", file=sys.stderr)
            raise
        finally:
            stack.compose("--profile", "observability", "down", "-v", "--remove-orphans", check=False, timeout=180)
    dropped = egress_dropped()
    check(dropped is not None and dropped == dropped_before,
          f"no packet tried to leave the compose networks (DROP rule counted {dropped_before} -> {dropped})")
    print("engine: measured " + json.dumps(report), flush=True)
    if os.environ.get("ENGINE_REPORT"):
        with open(os.environ["ENGINE_REPORT"], "w") as f:
            json.dump(report, f, indent=2)
    print(f"engine: {check.passed} passed, {check.failed} failed", flush=True)
    sys.exit(1 if check.failed else 0)


if __name__ == "__main__":
    main()
