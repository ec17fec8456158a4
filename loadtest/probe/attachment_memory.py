#!/usr/bin/env python3
"""Peak memory of a gateway and a worker while sends with large images arrive at
once, under given attachment memory budgets (stdlib only; BENCHMARKS.md
"Attachments: memory stays bounded").

Starts `weft serve` + `weft worker` on a fresh Postgres database and Redis prefix
(127.0.0.1, trust auth), sends SENDS messages in parallel, each with four noise
PNGs of 950x950 (about 10 MiB) and `@mock.describe_images @mock.delay 2000 0`,
samples both processes' VmRSS every 20 ms, then drops the database.

usage: attachment_memory.py WEFT_BIN BUDGET_MIB [BUDGET_MIB ...] [--sends N]
"""
import base64, json, os, random, struct, subprocess, sys, tempfile, threading, time
import urllib.error, urllib.request, uuid, zlib

PORT = 18977
TOKEN = "weft_probe_admin_token_0123456789abcdef"


def png(side, seed):
    rnd = random.Random(seed)
    raw = b"".join(b"\x00" + rnd.randbytes(side * 3) for _ in range(side))

    def chunk(kind, data):
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def call(path, body=None, method="POST"):
    req = urllib.request.Request(
        f"http://127.0.0.1:{PORT}{path}", method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"authorization": f"Bearer {TOKEN}", "content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read() or b"null")


def psql(sql):
    subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-qc", sql], check=True)


def measure(weft, budget_mib, sends):
    home = tempfile.mkdtemp()
    db = "weft_probe_" + uuid.uuid4().hex[:12]
    psql(f"create database {db}")
    env = dict(os.environ, HOME=home, WEFT_ADMIN_TOKEN=TOKEN, RUST_LOG="warn",
               WEFT_DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{db}",
               WEFT_REDIS_URL="redis://127.0.0.1:6379", WEFT_REDIS_PREFIX=db + ":",
               WEFT_ATTACHMENTS__WORKER_IMAGE_MEMORY_BYTES=str(budget_mib << 20),
               WEFT_ATTACHMENTS__GATEWAY_UPLOAD_MEMORY_BYTES=str(budget_mib << 20),
               WEFT_WORKER__CONCURRENCY="64", WEFT_LIMITS__ACTIVE_RUNS_PER_USER="0",
               WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER="0")
    procs = []
    try:
        subprocess.run([weft, "migrate"], env=env, check=True, stderr=subprocess.DEVNULL)
        quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        gateway = subprocess.Popen([weft, "serve", "--listen", f"127.0.0.1:{PORT}"], env=env, **quiet)
        worker = subprocess.Popen([weft, "worker"], env=env, **quiet)
        procs = [gateway, worker]
        for _ in range(300):
            try:
                call("/health", method="GET")
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        images = [base64.b64encode(png(950, i)).decode() for i in range(4)]
        per_message = sum(len(base64.b64decode(i)) for i in images)
        sessions = [call("/v1/sessions", {})["id"] for _ in range(sends)]
        time.sleep(1)
        rest = (rss_kib(gateway.pid), rss_kib(worker.pid))
        peak = list(rest)
        outcome = {"ok": 0, "refused": 0}
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], rss_kib(gateway.pid))
                peak[1] = max(peak[1], rss_kib(worker.pid))
                time.sleep(0.02)

        def send(session):
            body = {"text": "@mock.describe_images @mock.delay 2000 0", "wait": True,
                    "attachments": [{"name": f"{k}.png", "data": images[k]} for k in range(4)]}
            try:
                reply = call(f"/v1/sessions/{session}/messages", body)
                assert reply["content"].startswith("image 1: image/png"), reply
                outcome["ok"] += 1
            except (urllib.error.URLError, ConnectionError):
                outcome["refused"] += 1  # 503 (no room in 10 s), or the pipe it closed

        sampler = threading.Thread(target=sample)
        sampler.start()
        started = time.time()
        threads = [threading.Thread(target=send, args=(s,)) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.time() - started
        done.set()
        sampler.join()
        print(f"budgets {budget_mib} MiB: {sends} sends of {per_message / 1048576:.1f} MiB of images: "
              f"gateway RSS {rest[0] >> 10} -> peak {peak[0] >> 10} MiB, worker RSS {rest[1] >> 10} -> peak "
              f"{peak[1] >> 10} MiB; {outcome['ok']} answered, {outcome['refused']} refused, {took:.1f} s", flush=True)
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        psql(f"drop database if exists {db} with (force)")


if __name__ == "__main__":
    args = sys.argv[1:]
    sends = 16
    if "--sends" in args:
        i = args.index("--sends")
        sends = int(args[i + 1])
        del args[i:i + 2]
    for budget in args[1:]:
        measure(args[0], int(budget), sends)
