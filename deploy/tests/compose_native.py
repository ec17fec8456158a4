"""deploy/compose.yaml read as Compose reads it, then turned into native
processes: the same commands, environment, secrets and health checks, with
container addresses swapped for 127.0.0.1 ones. Nothing else is changed, so a
wrong command, variable, secret path or health check in the file fails here.

What is swapped (and only that):
* `postgres:5432` -> the machine's Postgres (user postgres, trust auth, a fresh
  database); Redis runs natively from its service's command (the machine's
  redis-server, with the password compose gives it);
* each service's own ports (`0.0.0.0:N`, `127.0.0.1:N`, `--port N`, `-p N`, its
  published and exposed ports) and `<service>:N` elsewhere -> a free 127.0.0.1 port;
* `/run/secrets/<name>` -> a file holding the secret's value;
* the image's /var/lib/weft and every volume mount target -> the same path
  under a directory of the service's own (containers/<service>/ in the run's
  work dir), as a container's filesystem is its own; a mount there is a
  symlink to the volume: one directory per named volume, shared by exactly the
  services that mount it, or a bind mount's path on this machine. So a store a
  gateway writes and a worker reads is shared natively only where Docker would
  share it, whether it is named by its path or derived from WEFT_DATA_DIR. (The
  container's read-only root is not enforced: the run is root.)
* the environment starts from the image's (ENV of the Dockerfile's last
  stage), the service's `environment` over it, as in a container;
* the `edge` network's subnet -> 127.0.0.1/32 (nginx reaches the gateways over
  loopback);
* the image's entrypoint `weft` -> the binary under test.
"""

import os
import re
import shlex
import socket
import subprocess

import yaml

DEPLOY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPOSE = os.path.join(DEPLOY, "compose.yaml")
ENV_EXAMPLE = os.path.join(DEPLOY, ".env.example")
DOCKERFILE = os.path.join(DEPLOY, "Dockerfile")
MAKE_SECRETS = os.path.join(DEPLOY, "make-secrets")
# Where the image keeps state (WEFT_DATA_DIR); a container's own unless mounted.
IMAGE_STATE = "/var/lib/weft"

_VAR = re.compile(r"\$(?:\$|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")


def interpolate(text, env):
    """Compose's variable syntax: $VAR, ${VAR}, ${VAR:-d}, ${VAR-d}, ${VAR:?e}, $$."""

    def one(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group("name") or m.group("bare")
        op, arg = m.group("op"), m.group("arg")
        value = env.get(name)
        if op in (":-", "-"):
            if value is None or (op == ":-" and value == ""):
                return interpolate(arg, env)
        elif op in (":?", "?"):
            if value is None or (op == ":?" and value == ""):
                raise ValueError(f"compose: ${{{name}}} is required: {arg}")
        return value or ""

    return _VAR.sub(one, text)


def read_env_file(path):
    """A dotenv file as Compose reads it: KEY=VALUE, # comments, ${} in values."""
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, value = line.partition("=")
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            env[key.strip()] = interpolate(value, env)
    return env


def make_secrets(directory):
    """deploy/make-secrets into `directory`, as an operator runs it: the
    secrets' values by file name (without the file's trailing newline)."""
    subprocess.run(["sh", MAKE_SECRETS, directory], check=True, capture_output=True, text=True, timeout=60)
    out = {}
    for name in os.listdir(directory):
        with open(os.path.join(directory, name)) as f:
            out[name] = f.read().removesuffix("\n")
    return out


def deep_map(node, fn):
    if isinstance(node, str):
        return fn(node)
    if isinstance(node, list):
        return [deep_map(v, fn) for v in node]
    if isinstance(node, dict):
        return {k: deep_map(v, fn) for k, v in node.items()}
    return node


def load_compose(env):
    with open(COMPOSE) as f:
        raw = yaml.safe_load(f)
    return raw, deep_map(raw, lambda s: interpolate(s, env))


def image_env(path=DOCKERFILE):
    """ENV of the Dockerfile's last stage (KEY=VALUE form), as the container starts with."""
    with open(path) as f:
        text = re.sub(r"\\\n", " ", f.read())
    last = re.split(r"^FROM\b.*$", text, flags=re.M)[-1]
    env = {}
    for line in re.findall(r"^ENV\s+(.*)$", last, re.M):
        for word in shlex.split(line):
            key, sep, value = word.partition("=")
            assert sep, f"Dockerfile: ENV {line!r} is not KEY=VALUE"
            env[key] = value
    return env


def mounts(service, volumes, root):
    """Mount target in the container -> its source on this machine (see above)."""
    out = {}
    for spec in service.get("volumes") or []:
        if isinstance(spec, dict):
            source, target = spec.get("source"), spec["target"]
        else:
            source, target = str(spec).split(":")[:2]
        if source in volumes:
            out[target] = os.path.join(root, "volumes", source)
        elif source and source.startswith((".", "/")):
            out[target] = os.path.normpath(os.path.join(DEPLOY, source))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def container_ports(service):
    """Ports the service listens on inside its container."""
    ports = set()
    for word in service.get("command") or []:
        m = re.fullmatch(r"0\.0\.0\.0:(\d+)", str(word))
        if m:
            ports.add(int(m.group(1)))
    for mapping in service.get("ports") or []:
        ports.add(int(str(mapping).rsplit(":", 1)[-1].split("/")[0]))
    for port in service.get("expose") or []:
        ports.add(int(str(port).split("/")[0]))
    return ports


class NativePlan:
    """Every swap above, decided once for the whole file."""

    def __init__(self, compose, env, database, redis_prefix, secrets_dir, weft_bin):
        self.compose = compose
        self.env = env
        self.database = database
        self.redis_prefix = redis_prefix
        self.secrets_dir = secrets_dir
        self.weft_bin = weft_bin
        services = compose["services"]
        self.ports = {
            name: {p: free_port() for p in sorted(container_ports(svc))}
            for name, svc in services.items()
        }
        self.edge_subnet = compose["networks"]["edge"]["ipam"]["config"][0]["subnet"]
        self.root = os.path.dirname(secrets_dir)
        self.mounts = {name: mounts(svc, compose.get("volumes") or {}, self.root) for name, svc in services.items()}
        # Container paths each service has natively under its own root.
        self.own_paths = {
            name: sorted(set(self.mounts[name]) | ({IMAGE_STATE} if "build" in svc else set()), key=len, reverse=True)
            for name, svc in services.items()
        }
        self.image_env = image_env()

    def native(self, name, text):
        """`text` as service `name` sees it, with addresses swapped."""
        text = re.sub(
            r"postgres(?:ql)?://[^@/\s]+@postgres:5432/[A-Za-z0-9_]+",
            f"postgres://postgres@127.0.0.1:5432/{self.database}",
            text,
        )
        text = text.replace(self.edge_subnet, "127.0.0.1/32")
        text = text.replace("/run/secrets/", self.secrets_dir + "/")
        paths = self.own_paths.get(name)
        if paths:
            pattern = "|".join(re.escape(p) for p in paths)
            text = re.sub(rf"(?<![\w./-])(?:{pattern})(?![\w.-])", lambda m: self.container_root(name) + m.group(0), text)
        for port, native in self.ports.get(name, {}).items():
            text = re.sub(rf"\b(?:0\.0\.0\.0|127\.0\.0\.1|localhost):{port}\b", f"127.0.0.1:{native}", text)
            text = re.sub(rf"(?<![\w-])(--port|-p)(\s+){port}\b", rf"\g<1>\g<2>{native}", text)
        for other, ports in self.ports.items():
            for port, native in ports.items():
                text = re.sub(rf"(?<![\w.-]){re.escape(other)}:{port}\b", f"127.0.0.1:{native}", text)
        return text

    def container_root(self, name):
        return os.path.join(self.root, "containers", name)

    def make_dirs(self, name):
        """What the image and Docker provide before a service starts: the image's
        /var/lib/weft, and each mount (a named volume is made when first mounted)."""
        top = self.container_root(name)
        if IMAGE_STATE in self.own_paths.get(name, []):
            os.makedirs(top + IMAGE_STATE, exist_ok=True)
        for target, source in self.mounts.get(name, {}).items():
            if source.startswith(self.root + os.sep):
                os.makedirs(source, exist_ok=True)
            os.makedirs(os.path.dirname(top + target), exist_ok=True)
            os.symlink(source, top + target)

    def write_secrets(self):
        os.makedirs(self.secrets_dir, exist_ok=True)
        for name, spec in self.compose.get("secrets", {}).items():
            # Compose mounts a `file:` secret as it is (relative to the
            # project directory, deploy/), an `environment:` one as the value.
            if "environment" in spec:
                value = self.env[spec["environment"]] + "\n"
            else:
                with open(os.path.join(DEPLOY, spec["file"])) as f:
                    value = f.read()
            with open(os.path.join(self.secrets_dir, name), "w") as f:
                f.write(self.native(name, value))

    def weft_services(self):
        """The services running the Weft image (they have a `build`)."""
        return [n for n, s in self.compose["services"].items() if "build" in s and not s.get("profiles")]

    def process(self, name):
        """argv and environment of a Weft service, natively."""
        svc = self.compose["services"][name]
        argv = [self.weft_bin] + [self.native(name, str(a)) for a in svc.get("command") or []]
        environment = svc.get("environment") or {}
        if isinstance(environment, list):
            environment = dict(e.split("=", 1) for e in environment)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": self.root,
            "RUST_LOG": "warn",
        }
        env.update({k: self.native(name, v) for k, v in self.image_env.items()})
        env.update({k: self.native(name, str(v)) for k, v in environment.items() if v is not None})
        env["WEFT_REDIS_PREFIX"] = self.redis_prefix
        return argv, env

    def service_process(self, name):
        """argv of a service that runs another image's program (Redis), natively:
        its command as written, with the swaps above."""
        svc = self.compose["services"][name]
        argv = [self.native(name, str(a)) for a in svc.get("command") or []]
        return argv, {"PATH": os.environ.get("PATH", ""), "HOME": self.container_root(name)}

    def healthcheck(self, name):
        """The service's health check command as argv (None when it has none)."""
        check = self.compose["services"][name].get("healthcheck")
        if not check or check.get("disable"):
            return None
        test = check["test"]
        if isinstance(test, str):
            return ["sh", "-c", self.native(name, test)]
        kind, args = test[0], [self.native(name, str(a)) for a in test[1:]]
        if kind == "CMD-SHELL":
            return ["sh", "-c", " ".join(args)]
        if kind == "CMD":
            return args
        raise ValueError(f"{name}: health check {test!r} is not CMD or CMD-SHELL")

    def nginx_conf(self, text, pid_path):
        """deploy/nginx.conf with its upstreams, port and pid file swapped."""
        text = self.native("nginx", text)
        text = re.sub(r"\blisten\s+(\d+)\s*;", lambda m: f"listen 127.0.0.1:{self.ports['nginx'][int(m.group(1))]};", text)
        return re.sub(r"\bpid\s+\S+;", f"pid {pid_path};", text)
