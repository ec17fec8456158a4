#!/usr/bin/env python3
"""Regenerates the vendored JSON schemas in deploy/tests/schemas/ (data, not code
we run in production; deploy/tests/schemas/README.md says where each comes from
and under which licence).

Usage: vendor_schemas.py COMPOSE_SPEC_JSON KEDA_SCALEDOBJECTS_CRD_YAML K8S_SCHEMA_DIR
  COMPOSE_SPEC_JSON   schema/compose-spec.json of github.com/compose-spec/compose-spec
  KEDA_..._CRD_YAML   config/crd/bases/keda.sh_scaledobjects.yaml of github.com/kedacore/keda
  K8S_SCHEMA_DIR      kubernetes_validate/kubernetes-json-schema/v1.32.0-local-strict
                      from the PyPI package kubernetes-validate

Kubernetes' schemas are cut down to the kinds deploy/k8s uses and every
definition they reach, in one file.
"""

import json
import os
import sys

import yaml

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas")

# apiVersion/kind -> the kind's file in kubernetes-validate's folder.
KINDS = {
    "v1/ConfigMap": "configmap-v1.json",
    "v1/Secret": "secret-v1.json",
    "v1/Service": "service-v1.json",
    "v1/ServiceAccount": "serviceaccount-v1.json",
    "v1/Namespace": "namespace-v1.json",
    "apps/v1/Deployment": "deployment-apps-v1.json",
    "batch/v1/Job": "job-batch-v1.json",
    "autoscaling/v2/HorizontalPodAutoscaler": "horizontalpodautoscaler-autoscaling-v2.json",
    "policy/v1/PodDisruptionBudget": "poddisruptionbudget-policy-v1.json",
    "networking.k8s.io/v1/Ingress": "ingress-networking-v1.json",
    "networking.k8s.io/v1/NetworkPolicy": "networkpolicy-networking-v1.json",
}
# Kind files point into _definitions.json, which points into itself.
DEFS_REFS = ("/api/_definitions.json#/$defs/", "#/$defs/")


def rewrite_refs(node, found):
    """Points refs into the bundle's own $defs and collects their names."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        prefix = next((p for p in DEFS_REFS if isinstance(ref, str) and ref.startswith(p)), None)
        if prefix:
            name = ref[len(prefix):]
            node["$ref"] = "#/$defs/" + name
            found.add(name)
        for v in node.values():
            rewrite_refs(v, found)
    elif isinstance(node, list):
        for v in node:
            rewrite_refs(v, found)


def kubernetes(folder):
    with open(os.path.join(folder, "_definitions.json")) as f:
        all_defs = json.load(f)["$defs"]
    kinds, defs, todo = {}, {}, set()
    for key, file in KINDS.items():
        with open(os.path.join(folder, file)) as f:
            schema = json.load(f)
        rewrite_refs(schema, todo)
        kinds[key] = schema
    while todo:
        name = todo.pop()
        if name in defs:
            continue
        schema = json.loads(json.dumps(all_defs[name]))
        found = set()
        rewrite_refs(schema, found)
        defs[name] = schema
        todo |= found - defs.keys()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "Kubernetes 1.32 strict schemas of the kinds deploy/k8s uses, cut from the PyPI package kubernetes-validate 1.37.0 (Apache-2.0), generated from Kubernetes' OpenAPI (Apache-2.0). Regenerate with deploy/tests/vendor_schemas.py.",
        "kinds": kinds,
        "$defs": dict(sorted(defs.items())),
    }


def keda(crd_path):
    with open(crd_path) as f:
        crd = yaml.safe_load(f)
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
    schema = version["schema"]["openAPIV3Schema"]
    schema["$comment"] = "openAPIV3Schema of KEDA's ScaledObject CRD (keda.sh/v1alpha1), from github.com/kedacore/keda config/crd/bases/keda.sh_scaledobjects.yaml (Apache-2.0)."
    return schema


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    compose, crd, k8s = sys.argv[1:]
    # The Compose schema is vendored as it is published, byte for byte.
    with open(compose, "rb") as f, open(os.path.join(OUT, "compose-spec.json"), "wb") as out:
        out.write(f.read())
    outputs = {
        "keda-scaledobject-v1alpha1.json": keda(crd),
        "kubernetes-1.32-strict.json": kubernetes(k8s),
    }
    for name, data in outputs.items():
        with open(os.path.join(OUT, name), "w") as f:
            json.dump(data, f, indent=1, sort_keys=False)
            f.write("\n")
        print(f"wrote schemas/{name}")


if __name__ == "__main__":
    main()
