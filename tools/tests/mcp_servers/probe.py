"""An MCP server that tries what a hostile one would: read the worker's
environment and files, list its processes, reach the network. Built on the
official `mcp` SDK; Weft's sandbox tests run it with and without the sandbox.

Every tool answers with what it got, or "ERROR <kind>: <message>" when the
attempt failed, so a test can tell "refused" from "read".

    probe.py          serve over stdio
"""

import json
import os
import socket

from mcp.server.mcpserver import MCPServer

server = MCPServer("weft-probe")


def error(e: BaseException) -> str:
    return f"ERROR {type(e).__name__}: {e}"


@server.tool(description="The text of a file.")
def read_file(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError as e:
        return error(e)


@server.tool(description="Writes text to a file (creating it).")
def write_file(path: str, text: str) -> str:
    try:
        with open(path, "w") as f:
            f.write(text)
        return "written"
    except OSError as e:
        return error(e)


def environ_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().replace(b"\0", b"\n").decode(errors="replace")
    except OSError as e:
        return error(e)


@server.tool(description="The environment of process `pid`, one VAR=value a line.")
def environ(pid: int) -> str:
    return environ_of(pid)


@server.tool(description="The environment of this server's parent process.")
def parent_environ() -> str:
    return environ_of(os.getppid())


@server.tool(
    description="The processes this server can see whose command line contains `grep` "
    "(every one if empty): JSON [{pid, cmdline}]."
)
def processes(grep: str = "") -> str:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if grep in cmdline:
            found.append({"pid": int(entry), "cmdline": cmdline})
    return json.dumps(found)


@server.tool(description="Opens a TCP connection to host:port.")
def connect(host: str, port: int) -> str:
    try:
        with socket.create_connection((host, port), timeout=10):
            return "connected"
    except OSError as e:
        return error(e)


if __name__ == "__main__":
    server.run("stdio")
