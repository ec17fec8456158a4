"""The compose topology as native child processes: the machine's Postgres
stands in for that service, Redis runs from its service's command with the
machine's redis-server (so its password is required as compose requires it),
every Weft service runs the binary under test with its volumes as directories
of the run, Debian's nginx runs deploy/nginx.conf. Services start in depends_on order and a dependency counts
as met the way Compose decides it: by the dependency's own health check as
written, or by its exit code."""

import os
import subprocess
import sys
import threading
import time
import uuid

from compose_native import DEPLOY, NativePlan, load_compose, make_secrets, read_env_file, ENV_EXAMPLE

# Services the machine provides instead of containers.
MACHINE = {"postgres"}
START_TIMEOUT_S = 60


class Child:
    def __init__(self, name, argv, env=None):
        self.name = name
        self.lines = []
        self.proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def tail(self, n=15):
        return "\n".join(f"    {self.name}| {line}" for line in self.lines[-n:])


class Topology:
    def __init__(self, weft_bin, nginx_bin, workdir):
        self.env = read_env_file(ENV_EXAMPLE)
        # What the operator does: ./make-secrets, here into the run's own
        # directory (WEFT_SECRETS_DIR, as .env may say).
        secret_files = os.path.join(workdir, "secret-files")
        self.token = make_secrets(secret_files)["weft_admin_token"]
        self.env["WEFT_SECRETS_DIR"] = secret_files
        self.raw, self.compose = load_compose(self.env)
        tag = uuid.uuid4().hex[:10]
        self.database = f"weft_deploy_{tag}"
        self.plan = NativePlan(
            self.compose, self.env, self.database, f"weft-deploy-{tag}:",
            os.path.join(workdir, "secrets"), weft_bin,
        )
        self.workdir, self.nginx_bin = workdir, nginx_bin
        self.children = {}

    # --- lifecycle ---------------------------------------------------------

    def start(self):
        psql("create database " + self.database)
        self.plan.write_secrets()
        for name in self.order():
            self.wait_for_dependencies(name)
            if name in MACHINE:
                continue
            if name == "nginx":
                self.start_nginx()
            elif name == "redis":
                self.plan.make_dirs(name)
                argv, env = self.plan.service_process(name)
                print(f"deploy: start redis on 127.0.0.1:{self.port('redis')}", flush=True)
                self.children[name] = Child(name, argv, env)
            else:
                self.plan.make_dirs(name)
                argv, env = self.plan.process(name)
                print(f"deploy: start {name}: weft {' '.join(argv[1:])}", flush=True)
                self.children[name] = Child(name, argv, env)
        # As `docker compose up --wait`: every service with a health check healthy.
        for name in self.children:
            if self.plan.healthcheck(name) is not None:
                self.wait_healthy(name)

    def stop(self):
        for child in reversed(list(self.children.values())):
            child.stop()
        psql("drop database if exists " + self.database + " with (force)")

    def order(self):
        """Services (without profiles) with every dependency before them."""
        services = {n: s for n, s in self.compose["services"].items() if not s.get("profiles")}
        done, out = set(), []

        def visit(name, path=()):
            assert name not in path, f"depends_on cycle: {path + (name,)}"
            if name in done:
                return
            for dep in deps(services[name]):
                visit(dep, path + (name,))
            done.add(name)
            out.append(name)

        for name in services:
            visit(name)
        return out

    def wait_for_dependencies(self, name):
        for dep, cond in deps(self.compose["services"][name]).items():
            if cond == "service_completed_successfully":
                child = self.children[dep]
                code = child.proc.wait(START_TIMEOUT_S)
                if code != 0:
                    sys.exit(f"deploy: {dep} exited {code}, {name} cannot start\n{child.tail()}")
            elif cond == "service_healthy":
                self.wait_healthy(dep)

    def wait_healthy(self, name):
        argv = self.plan.healthcheck(name)
        if argv is None:
            sys.exit(f"deploy: {name} is waited for as healthy but has no health check")
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            ok, out = run_check(argv)
            if ok:
                return
            child = self.children.get(name)
            if child and child.proc.poll() is not None:
                sys.exit(f"deploy: {name} exited {child.proc.returncode}\n{child.tail()}")
            if time.monotonic() > deadline:
                sys.exit(f"deploy: {name} not healthy in {START_TIMEOUT_S} s: {' '.join(argv)}: {out}\n"
                         + (child.tail() if child else ""))
            time.sleep(0.3)

    def start_nginx(self):
        with open(os.path.join(DEPLOY, "nginx.conf")) as f:
            conf = self.plan.nginx_conf(f.read(), os.path.join(self.workdir, "nginx.pid"))
        path = os.path.join(self.workdir, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        argv = [self.nginx_bin, "-p", self.workdir + "/", "-c", path, "-e", "stderr", "-g", "daemon off;"]
        test = subprocess.run(argv[:-2] + ["-t"], capture_output=True, text=True)
        if test.returncode != 0:
            sys.exit(f"deploy: nginx rejects deploy/nginx.conf:\n{test.stderr}")
        print(f"deploy: start nginx on 127.0.0.1:{self.port('nginx')}", flush=True)
        self.children["nginx"] = Child("nginx", argv)

    # --- what the scenario needs -------------------------------------------

    def port(self, name, container_port=None):
        ports = self.plan.ports[name]
        return ports[container_port] if container_port else next(iter(ports.values()))

    def services_of(self, command):
        """Weft services whose command starts with `command` (serve, worker)."""
        return [n for n in self.plan.weft_services() if (self.compose["services"][n].get("command") or [None])[0] == command]


def deps(service):
    d = service.get("depends_on") or {}
    if isinstance(d, list):
        return {name: "service_started" for name in d}
    return {name: (spec or {}).get("condition", "service_started") for name, spec in d.items()}


def run_check(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    return r.returncode == 0, (r.stdout + r.stderr).strip()[-300:]


def psql(sql):
    subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qc", sql],
        check=True, timeout=60,
    )
