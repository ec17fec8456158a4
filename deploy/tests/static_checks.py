"""Checks of deploy/ that need no running service: the compose file against
the Compose Specification schema, the rendered kustomize overlays against
Kubernetes' and KEDA's schemas, the Dockerfile linted and built by the same
script as scripts/run. Each validator is first shown a broken document it must
reject, so a validator that accepts anything fails the run."""

import copy
import json
import os
import re
import subprocess
import tempfile

import jsonschema
import yaml

from compose_native import COMPOSE, DEPLOY, ENV_EXAMPLE, make_secrets, read_env_file

ROOT = os.path.dirname(DEPLOY)
SCHEMAS = os.path.join(DEPLOY, "tests", "schemas")
K8S = os.path.join(DEPLOY, "k8s")


def load_schema(name):
    with open(os.path.join(SCHEMAS, name)) as f:
        return json.load(f)


def errors(validator, doc):
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in validator.iter_errors(doc)]


def compose_schema(check):
    schema = load_schema("compose-spec.json")
    validator = jsonschema.Draft7Validator(schema)
    with open(COMPOSE) as f:
        doc = yaml.safe_load(f)
    broken = copy.deepcopy(doc)
    broken["services"]["gateway-1"]["helthcheck"] = broken["services"]["gateway-1"].pop("healthcheck")
    check(errors(validator, broken), "the Compose schema rejects a misspelt key (validator works)")
    found = errors(validator, doc)
    check(not found, "deploy/compose.yaml validates against the Compose Specification schema" + "".join(f"\n      {e}" for e in found))


def strict(node):
    """Kubernetes prunes unknown fields of a CRD object and kubectl refuses them
    (--validate=strict): close every object schema that lists its properties."""
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node and not node.get("x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
        for v in node.values():
            strict(v)
    elif isinstance(node, list):
        for v in node:
            strict(v)
    return node


def k8s_validators():
    bundle = load_schema("kubernetes-1.32-strict.json")
    validators = {}
    for key, schema in bundle["kinds"].items():
        whole = dict(schema, **{"$defs": bundle["$defs"]})
        validators[key] = jsonschema.Draft202012Validator(whole)
    validators["keda.sh/v1alpha1/ScaledObject"] = jsonschema.Draft7Validator(strict(load_schema("keda-scaledobject-v1alpha1.json")))
    return validators


def render(kubectl, path):
    r = subprocess.run([kubectl, "kustomize", path], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return [d for d in yaml.safe_load_all(r.stdout) if d], ""


def kustomize(check, kubectl):
    validators = k8s_validators()
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
                  "spec": {"selector": {}, "template": {"spec": {"containers": [{"name": "x", "imagePullPolicy": "Always", "livenesProbe": {}}]}}}}
    check(errors(validators["apps/v1/Deployment"], deployment), "the Kubernetes schema rejects a misspelt probe (validator works)")
    scaled = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "x"},
              "spec": {"scaleTargetRef": {"name": "x"}, "triggers": [{"type": "prometheus", "metadata": {}}], "minReplicas": 1}}
    check(errors(validators["keda.sh/v1alpha1/ScaledObject"], scaled), "the KEDA schema rejects an unknown field (validator works)")

    with tempfile.TemporaryDirectory(prefix=".check-", dir=os.path.join(K8S, "overlays")) as hpa:
        # The plain-HPA alternative, as an overlay would pick it.
        with open(os.path.join(hpa, "kustomization.yaml"), "w") as f:
            f.write("resources: [../../base]\ncomponents: [../../components/worker-hpa]\n")
        targets = {"overlays/example": os.path.join(K8S, "overlays", "example"), "base + components/worker-hpa": hpa}
        for label, path in targets.items():
            docs, err = render(kubectl, path)
            check(docs is not None, f"kubectl kustomize renders {label} {err}")
            for doc in docs or []:
                key = f"{doc.get('apiVersion')}/{doc.get('kind')}"
                name = f"{label}: {doc.get('kind')} {doc.get('metadata', {}).get('name')}"
                if key not in validators:
                    check(False, f"{name}: no vendored schema for {key}")
                    continue
                found = errors(validators[key], doc)
                check(not found, f"{name} validates" + "".join(f"\n      {e}" for e in found[:8]))
            if docs:
                ingress_hides_metrics(check, docs, label)
            kinds = {d["kind"] for d in docs or []}
            want = {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Job", "Ingress", "NetworkPolicy", "ConfigMap"}
            want |= {"ScaledObject", "Secret"} if label.startswith("overlays") else set()
            check(want <= kinds, f"{label} has {sorted(want)} (missing: {sorted(want - kinds)})")


def flag_value(args, flag):
    """`--flag VALUE` or `--flag=VALUE` in a container's args."""
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def metrics_exposures(docs):
    """Every path an Ingress routes, followed to the container port it reaches:
    [(what, problem or None)]. A path reaching a port that serves /metrics (a
    gateway without --metrics-listen, or the --metrics-listen port itself) is a
    problem; so is a scrape annotation pointing at another port."""
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    pods = [d for d in docs if d["kind"] == "Deployment"]
    out = []
    for ing in (d for d in docs if d["kind"] == "Ingress"):
        for rule in ing["spec"].get("rules", []):
            for path in rule.get("http", {}).get("paths", []):
                backend = path["backend"]["service"]
                what = f"Ingress {ing['metadata']['name']} {rule.get('host', '*')}{path['path']}"
                svc = services.get(backend["name"])
                if svc is None:
                    out.append((what, f"routes to unknown Service {backend['name']}"))
                    continue
                want = backend["port"].get("name", backend["port"].get("number"))
                sport = next((p for p in svc["spec"]["ports"] if want in (p.get("name"), p.get("port"))), None)
                if sport is None:
                    out.append((what, f"Service {backend['name']} has no port {want}"))
                    continue
                target = sport.get("targetPort", sport.get("port"))
                selector = svc["spec"].get("selector", {})
                for dep in pods:
                    labels = dep["spec"]["template"]["metadata"].get("labels", {})
                    if not selector or any(labels.get(k) != v for k, v in selector.items()):
                        continue
                    for c in dep["spec"]["template"]["spec"]["containers"]:
                        port = next((p for p in c.get("ports", []) if target in (p.get("name"), p.get("containerPort"))), None)
                        if port is None:
                            continue
                        n = port["containerPort"]
                        metrics = flag_value(c.get("args", []), "--metrics-listen")
                        m = int(metrics.rsplit(":", 1)[1]) if metrics else None
                        scrape = dep["spec"]["template"]["metadata"].get("annotations", {}).get("prometheus.io/port")
                        reach = f"{what} -> {dep['metadata']['name']}:{n}"
                        if m is None:
                            out.append((reach, "serves /metrics: the container has no --metrics-listen"))
                        elif m == n:
                            out.append((reach, "is the --metrics-listen port"))
                        elif scrape is not None and int(scrape) != m:
                            out.append((reach, f"prometheus.io/port {scrape} is not the metrics port {m}"))
                        else:
                            out.append((reach, None))
    return out


def ingress_hides_metrics(check, docs, label):
    """The Ingress must not expose /metrics: every path it routes reaches a
    gateway port that answers 404 for it (the metrics are on --metrics-listen,
    which no routed Service port leads to). Shown a gateway without the flag
    first, which it must flag."""
    broken = copy.deepcopy(docs)
    for d in broken:
        if d["kind"] == "Deployment":
            for c in d["spec"]["template"]["spec"]["containers"]:
                args = c.get("args", [])
                if "--metrics-listen" in args:
                    i = args.index("--metrics-listen")
                    del args[i:i + 2]
    check(any(problem for _, problem in metrics_exposures(broken)),
          f"{label}: a gateway without --metrics-listen behind the Ingress is caught (check works)")
    found = metrics_exposures(docs)
    check(found and not any(problem for _, problem in found),
          f"{label}: the Ingress does not expose /metrics"
          + "".join(f"\n      {w}: {p}" for w, p in found if p))


def example_tokens_refused(check, weft):
    """The admin token deploy/ ships as an example (the k8s example overlay)
    stops a gateway at start-up with a clear error, and the one
    deploy/make-secrets generates for compose passes the same validation
    (`weft serve` then fails only later, at a database that is not there).
    Compose ships no example secrets: .env.example holds none."""
    examples = {}
    with open(os.path.join(K8S, "overlays", "example", "weft-secrets.env")) as f:
        for line in f:
            if line.startswith("admin-token="):
                examples["k8s overlay"] = line.split("=", 1)[1].strip()
    env_example = read_env_file(ENV_EXAMPLE)
    check(not any(k.startswith(("WEFT_ADMIN_TOKEN", "POSTGRES_PASSWORD", "REDIS_PASSWORD", "WEFT_DATABASE_URL",
                                "WEFT_REDIS_URL", "WEFT_LARK_APP_SECRET")) for k in env_example),
          f".env.example holds no secret (they are files made by make-secrets): {sorted(env_example)}")

    def serve(token):
        env = {"PATH": os.environ.get("PATH", ""), "HOME": tempfile.gettempdir(), "WEFT_ADMIN_TOKEN": token,
               "WEFT_DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", "WEFT_REDIS_URL": "redis://127.0.0.1:1"}
        r = subprocess.run([weft, "serve", "--listen", "127.0.0.1:0"], env=env, capture_output=True, text=True, timeout=60)
        return r.returncode, r.stderr

    check(len(examples) == 1, f"found the example tokens of {sorted(examples)}")
    for where, token in examples.items():
        code, err = serve(token)
        check(code != 0 and "WEFT_ADMIN_TOKEN" in err and "refused" in err,
              f"weft serve refuses the {where} admin token: exit {code}, {err.strip()[-160:]!r}")
    with tempfile.TemporaryDirectory(prefix="weft-secrets-") as work:
        made = make_secrets(os.path.join(work, "secrets"))
        again = make_secrets(os.path.join(work, "secrets"))
        mode = os.stat(os.path.join(work, "secrets")).st_mode & 0o777
    check(made == again and mode == 0o700, f"make-secrets keeps what it made (a second run changes nothing), in a 0700 directory ({mode:o})")
    check(f":{made['postgres_password']}@postgres:5432/" in made["weft_database_url"]
          and f":{made['redis_password']}@redis:6379" in made["weft_redis_url"],
          "make-secrets' URLs carry its passwords")
    code, err = serve(made["weft_admin_token"])
    check("WEFT_ADMIN_TOKEN" not in err, f"the admin token make-secrets generates passes validation ({err.strip()[-160:]!r})")


def dockerfile(check, hadolint):
    path = os.path.join(DEPLOY, "Dockerfile")
    with tempfile.NamedTemporaryFile("w", suffix=".Dockerfile") as bad:
        bad.write("FROM debian\nRUN cd /tmp && apt-get install curl\n")
        bad.flush()
        r = subprocess.run([hadolint, bad.name], capture_output=True, text=True)
        check(r.returncode != 0, "hadolint rejects a bad Dockerfile (linter works)")
    r = subprocess.run([hadolint, path], capture_output=True, text=True)
    check(r.returncode == 0, "hadolint passes deploy/Dockerfile " + (r.stdout + r.stderr).strip())
    with open(path) as f:
        # A RUN's continuation lines are part of it (RUN --mount=… \ on its own line).
        runs = " ".join(re.findall(r"^RUN\b(.*)$", re.sub(r"\\\n", " ", f.read()), re.M))
    with open(os.path.join(ROOT, "scripts", "run")) as f:
        run_script = f.read()
    check("scripts/build web" in runs and "scripts/build rust" in runs,
          "the Dockerfile builds the web UI and the binary with scripts/build")
    check(re.search(r"^scripts/build\s*$", run_script, re.M) is not None, "scripts/run builds with scripts/build")
    check(not re.search(r"\b(npm (ci|install|run)|cargo build)\b", runs), "the Dockerfile runs no build command of its own besides scripts/build")


def sse_proxy_settings(check):
    """What SSE needs from a proxy that the native run cannot show (nginx 1.22
    happens to pass event-stream chunks on promptly even when buffering, and a
    read timeout only bites after it runs out): stated in both proxies' config."""
    with open(os.path.join(DEPLOY, "nginx.conf")) as f:
        conf = re.sub(r"#.*", "", f.read())
    for directive in (r"proxy_buffering\s+off", r"proxy_read_timeout\s+(\d+h|\d{4,}s?)", r"proxy_http_version\s+1\.1",
                      r'proxy_set_header\s+Connection\s+""', r"proxy_set_header\s+X-Forwarded-For\s",
                      r"proxy_set_header\s+X-Forwarded-Proto\s", r"keepalive\s+\d+"):
        check(re.search(directive, conf), f"deploy/nginx.conf has {directive.replace(chr(92) + 's+', ' ')}")
    with open(os.path.join(K8S, "base", "ingress.yaml")) as f:
        notes = yaml.safe_load(f)["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    check(notes.get(prefix + "proxy-buffering") == "off", "the Ingress turns proxy buffering off")
    check(int(notes.get(prefix + "proxy-read-timeout", "60")) >= 3600, "the Ingress keeps quiet streams open for an hour")


def observability(check):
    """The Grafana dashboard and the alert rules parse, have the shape their tools
    load, and use only series docs/metrics.md documents (a renamed metric fails
    here, not silently in a dashboard)."""
    with open(os.path.join(ROOT, "docs", "metrics.md")) as f:
        documented = set(re.findall(r"^\| `(weft_[a-z_]+)`", f.read(), re.M))
    check(len(documented) > 10, f"docs/metrics.md documents {len(documented)} series")

    def used(expr):
        names = set(re.findall(r"\b(weft_[a-z_]+?)(?:_bucket|_sum|_count)?\b", expr))
        return {n for n in names if not n.endswith(("_bucket", "_sum", "_count"))}

    with open(os.path.join(DEPLOY, "observability", "alerts.yaml")) as f:
        rules = yaml.safe_load(f)
    alerts = [r for g in rules["groups"] for r in g["rules"]]
    check(alerts and all({"alert", "expr", "annotations"} <= set(r) for r in alerts),
          f"alerts.yaml: {len(alerts)} rules, each with alert, expr and annotations")
    with open(os.path.join(DEPLOY, "observability", "grafana-dashboard.json")) as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    check(dash.get("uid") and len(exprs) >= 10, f"the dashboard has a uid and {len(exprs)} queries")
    series = set().union(*(used(e) for e in exprs + [r["expr"] for r in alerts]))
    undocumented = sorted(series - documented)
    check(not undocumented, f"dashboard and alerts use only documented series (not: {undocumented})")
    # The check itself: a made-up series must be caught.
    check(used("rate(weft_made_up_total[5m])") - documented, "an undocumented series is noticed (check works)")
