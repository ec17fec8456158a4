#!/usr/bin/env python3
"""Schedule firing, measured on the real processes (BENCHMARKS.md "Schedules").

    scripts/bench_schedules.py --weft-bin target/release/weft [--schedules 10000] [--workers 3]

Distributed mode on this machine's Postgres (127.0.0.1:5432, a database of its
own, dropped at the end) and Redis (a key prefix of its own):

1. Statements per fire: Postgres logs every statement of the database
   (`log_statement = all`, set on that database alone) while one worker
   fires 20 schedules; the statements of each transaction that inserts a
   `schedule_fires` row are counted from the server's log, and so are the
   scheduler's reads between fires.
2. Lateness: `--schedules` schedules (each into a new session, run limits
   off) fall due over `--spread` seconds while `--workers` worker processes
   and one gateway run; lateness is `fired_at - fire_at` of every fire,
   which the database records. Every fire must make exactly one run.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid

PG = "postgres://postgres@127.0.0.1:5432"
PG_LOG = "/var/log/postgresql/postgresql-15-main.log"


def psql(db, sql):
    out = subprocess.run(
        ["psql", f"{PG}/{db}", "-Atqc", sql], check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


def now_ms():
    return int(time.time() * 1000)


def spawn(args, env, marker, log):
    f = open(log, "w")
    p = subprocess.Popen(args, env=env, stdout=f, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        text = open(log).read()
        if marker in text:
            return p
        if p.poll() is not None:
            sys.exit(f"{args} exited: {text[-2000:]}")
        time.sleep(0.1)
    sys.exit(f"{args} did not print {marker!r}")


def insert_schedules(db, n, first_ms, spread_ms, tag):
    psql(
        db,
        f"""insert into schedules (id, user_id, name, agent, model, prompt, trigger, timezone, enabled,
                 misfire, overlap, next_fire_at, created_at, updated_at)
            select 'sch_{tag}_' || i, u.id, 'bench ' || i, 'agent', 'mock', 'report ' || i,
                   '{{"every_secs":3600}}', 'UTC', 1, 'run_once', 'skip',
                   {first_ms} + (i * {spread_ms}) / {n}, {now_ms()}, {now_ms()}
            from generate_series(0, {n - 1}) i, users u where u.username = 'admin'""",
    )


def wait_fires(db, n, within, like):
    deadline = time.time() + within
    while time.time() < deadline:
        got = int(psql(db, f"select count(*) from schedule_fires where schedule_id like '{like}'"))
        if got >= n:
            return
        time.sleep(0.5)
    sys.exit(f"only {got} of {n} fires within {within} s")


def statements_per_fire(log_text, db):
    """Per backend, split the log into transactions; for each that inserts
    fires, its statements (begin and commit included) over its fires."""
    per_pid = {}
    for line in log_text.splitlines():
        m = re.search(r"\[(\d+)\] \S*@" + re.escape(db) + r" LOG:  (?:statement|execute [^:]*): (.*)", line)
        if m:
            per_pid.setdefault(m.group(1), []).append(m.group(2).strip().lower())
    fires, counts = 0, []
    for stmts in per_pid.values():
        tx = None
        for s in stmts:
            if s.startswith("begin"):
                tx = []
            elif s.startswith("commit") or s.startswith("rollback"):
                n = sum("insert into schedule_fires" in t for t in tx or [])
                if n:
                    fires += n
                    counts.append((len(tx) + 2, n))
                tx = None
            elif tx is not None:
                tx.append(s)
    return fires, counts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weft-bin", required=True)
    ap.add_argument("--schedules", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--spread", type=float, default=20.0, help="seconds over which they fall due")
    a = ap.parse_args()

    tag = uuid.uuid4().hex[:10]
    db = f"weft_bsched_{tag}"
    subprocess.run(["psql", f"{PG}/test", "-qc", f"create database {db}"], check=True)
    tmp = tempfile.mkdtemp(prefix="weft-bsched-")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": tmp,
        "RUST_LOG": "warn,weft=info",
        "WEFT_DATABASE_URL": f"{PG}/{db}",
        "WEFT_REDIS_URL": "redis://127.0.0.1:6379",
        "WEFT_REDIS_PREFIX": f"bsched_{tag}:",
        "WEFT_ADMIN_TOKEN": "bench-admin-token-0123456789abcdef",
        "WEFT_LIMITS__ACTIVE_RUNS_PER_USER": "0",
        "WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER": "0",
        "WEFT_DATABASE_MAX_CONNECTIONS": "16",
    }
    procs = []
    try:
        procs.append(spawn([a.weft_bin, "serve", "--listen", "127.0.0.1:0"], env, "listening on http://", f"{tmp}/gw.log"))

        # 1. Statements per fire, one worker, the database's statements logged.
        psql("test", f"alter database {db} set log_statement = 'all'")
        log_start = os.path.getsize(PG_LOG)
        w = spawn([a.weft_bin, "worker"], env, "worker started", f"{tmp}/w0.log")
        # Due at once, as at a full hour: they fire in one batch.
        insert_schedules(db, 20, now_ms() + 2000, 0, "stm")
        wait_fires(db, 20, 60, "sch_stm_%")
        time.sleep(1)
        w.terminate()
        w.wait()
        psql("test", f"alter database {db} reset log_statement")
        with open(PG_LOG, errors="replace") as f:
            f.seek(log_start)
            fires, counts = statements_per_fire(f.read(), db)
        per_tx = [f"{st}/{n}" for st, n in counts]
        counted = (
            f"{sum(st for st, _ in counts) / fires:.1f} ({fires} fires in {len(counts)} transactions, "
            f"statements/fires: {', '.join(per_tx)})"
            if counts
            else "n/a"
        )

        # 2. Lateness with N schedules and the worker replicas.
        for i in range(a.workers):
            procs.append(spawn([a.weft_bin, "worker"], env, "worker started", f"{tmp}/w{i + 1}.log"))
        n = a.schedules
        first = now_ms() + 8000
        insert_schedules(db, n, first, int(a.spread * 1000), "lat")
        wait_fires(db, n, a.spread + 120, "sch_lat_%")
        row = psql(
            db,
            """select percentile_cont(0.5) within group (order by fired_at - fire_at),
                      percentile_cont(0.99) within group (order by fired_at - fire_at),
                      max(fired_at - fire_at), count(*), count(distinct run_id),
                      sum(case when outcome = 'started' then 1 else 0 end)
               from schedule_fires where schedule_id like 'sch_lat_%'""",
        )
        p50, p99, mx, count, runs, started = row.split("|")
        dup = psql(db, "select count(*) from (select schedule_id from schedule_fires where schedule_id like 'sch_lat_%' group by schedule_id having count(*) > 1) d")
        print(f"| schedules | {n} due over {a.spread:.0f} s, {a.workers} workers + 1 gateway |")
        print("|---|---|")
        print(f"| fire lateness p50 / p99 / max | {float(p50):.0f} / {float(p99):.0f} / {mx} ms |")
        print(f"| fires / distinct runs / started / schedules fired twice | {count} / {runs} / {started} / {dup} |")
        print(f"| statements per fire (20 due at once into new sessions, begin and commit included) | {counted} |")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run(["psql", f"{PG}/test", "-qc", f"drop database if exists {db} with (force)"])


if __name__ == "__main__":
    main()
