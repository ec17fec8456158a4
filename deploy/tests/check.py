#!/usr/bin/env python3
"""Checks deploy/ without a container engine (scripts/check-deploy runs it).

Usage: check.py WEFT_BINARY
Needs on PATH (scripts/check-deploy installs them): kubectl, hadolint, nginx,
psql, redis-server, redis-cli, wget; Postgres on 127.0.0.1:5432 (the
topology's Redis is started from compose.yaml's redis service).
Each check prints ok/FAIL; the run ends with "N passed, N failed".
"""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import native_test  # noqa: E402
import static_checks  # noqa: E402
from topology import Topology  # noqa: E402


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


def tool(name):
    path = shutil.which(name)
    if not path:
        sys.exit(f"deploy: {name} is not installed (scripts/check-deploy installs it)")
    return path


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    weft = os.path.abspath(sys.argv[1])
    kubectl, hadolint, nginx = tool("kubectl"), tool("hadolint"), tool("nginx")
    for name in ("psql", "redis-server", "redis-cli", "wget", "pg_isready"):
        tool(name)
    check = Results()

    print("deploy: Dockerfile", flush=True)
    static_checks.dockerfile(check, hadolint)
    print("deploy: compose.yaml against the Compose Specification schema", flush=True)
    static_checks.compose_schema(check)
    static_checks.sse_proxy_settings(check)
    static_checks.observability(check)
    print("deploy: kustomize renders, objects against Kubernetes and KEDA schemas", flush=True)
    static_checks.kustomize(check, kubectl)
    print("deploy: the example admin tokens are refused", flush=True)
    static_checks.example_tokens_refused(check, weft)

    print("deploy: compose topology, natively", flush=True)
    with tempfile.TemporaryDirectory(prefix="weft-deploy-") as work:
        topo = Topology(weft, nginx, work)
        try:
            topo.start()
            native_test.admin_token_placement(topo, check)
            native_test.attachment(topo, check)
            victim = native_test.failover(topo, check)
            native_test.health_checks(topo, check, victim)
        except BaseException:
            for child in topo.children.values():
                print(child.tail(), file=sys.stderr)
            raise
        finally:
            topo.stop()

    print(f"deploy: {check.passed} passed, {check.failed} failed", flush=True)
    sys.exit(1 if check.failed else 0)


if __name__ == "__main__":
    main()
