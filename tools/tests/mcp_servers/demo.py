"""A small MCP server for Weft's MCP client tests, built on the official `mcp` SDK.

    demo.py                      serve over stdio
    demo.py --http               serve streamable HTTP on 127.0.0.1 (a free port,
                                 printed as "PORT <n>" on stdout once listening)
    demo.py --fail-unless PATH   exit with an error at start while PATH does not exist
                                 (a server that is broken until an admin fixes it)
"""

import argparse
import os
import socket
import subprocess
import sys

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import ToolAnnotations

server = MCPServer("weft-demo")


# Pure: the server says so (`readOnlyHint`), and plan mode offers them.
READS_ONLY = ToolAnnotations(readOnlyHint=True)


@server.tool(description="Add two integers.", annotations=READS_ONLY)
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Echo the text back.", annotations=READS_ONLY)
def echo(text: str) -> str:
    return text


@server.tool(description="Always fails, with the reason as the tool error.")
def fail(reason: str) -> str:
    raise ToolError(reason)


@server.tool(description="Always answers with a JSON-RPC error instead of a result.")
def protocol_error() -> str:
    raise MCPError(-32001, "the demo server refuses this request")


@server.tool(description="A text part and a PNG image of the given size.")
def picture(size_bytes: int) -> list:
    return ["here is the picture", Image(data=b"\x89PNG" + b"\0" * (size_bytes - 4), format="png")]


@server.tool(description="Sleeps; writes 'started' to marker, then 'cancelled' if cancelled.")
async def slow(seconds: float, marker: str) -> str:
    with open(marker, "w") as f:
        f.write("started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        with open(marker, "w") as f:
            f.write("cancelled")
        raise
    return "slept"


@server.tool(
    description="This process' id, that of a child it starts (sleep 600) and its PID namespace "
    "(as /proc/self/ns/pid names it; the same name outside a sandbox's namespace)."
)
def pids() -> str:
    child = subprocess.Popen(["sleep", "600"])
    return f"{os.getpid()} {child.pid} {os.readlink('/proc/self/ns/pid')}"


@server.tool(description="Exits the server process at once.")
def crash() -> str:
    sys.stderr.write("crashing on purpose\n")
    sys.stderr.flush()
    os._exit(7)


@server.tool(description="The value of an environment variable of this process.")
def env_var(name: str) -> str:
    return os.environ.get(name, "<absent>")


@server.tool(description="The value of a request header (streamable HTTP only).")
def header(name: str, ctx: Context) -> str:
    headers = ctx.headers or {}
    return headers.get(name.lower(), "<absent>")


@server.tool(description="The value of a key of this request's `_meta`.")
def meta(key: str, ctx: Context) -> str:
    return str((ctx.request_context.meta or {}).get(key, "<absent>"))


@server.tool(
    description="Appends this call's idempotency key to marker; the first call then "
    "hangs (its worker is to be killed), a later one answers how many calls it saw."
)
async def keyed(marker: str, ctx: Context) -> str:
    key = str((ctx.request_context.meta or {}).get("dev.weft/idempotency-key", "<absent>"))
    seen = open(marker).read().splitlines() if os.path.exists(marker) else []
    with open(marker, "a") as f:
        f.write(key + "\n")
    if not seen:
        await anyio.sleep(600)
    return f"call {len(seen) + 1} with this key" if seen == [key] * len(seen) else "other keys"


async def serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--fail-unless")
    args = parser.parse_args()
    if args.fail_unless and not os.path.exists(args.fail_unless):
        sys.stderr.write(f"boom: {args.fail_unless} is missing\n")
        sys.stderr.flush()
        sys.exit(3)
    if args.http:
        anyio.run(serve_http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
