"""Checks that the Helm chart, rendered with its defaults, makes the objects
of deploy/kubernetes/ (less the Namespace, which `helm install
--create-namespace` makes), so the two ways of installing cannot drift.

Usage: kubernetes-compare.py RENDERED.yaml MANIFEST.yaml...
What Helm adds of its own is left out of the comparison: its labels, the
namespace (given at install), the pod template's checksum annotations, and
the token file's text (a placeholder in the manifests, a value at render).
Exits 1 and names each difference when they differ.
"""

import json
import sys

import yaml

HELM_LABELS = {"app.kubernetes.io/managed-by", "helm.sh/chart"}


def objects(paths):
    found = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for doc in yaml.safe_load_all(f):
                if doc:
                    found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


def normalise(doc):
    meta = doc["metadata"]
    meta.pop("namespace", None)
    labels = meta.get("labels", {})
    for label in HELM_LABELS:
        labels.pop(label, None)
    if doc["kind"] == "Deployment":
        doc["spec"]["template"]["metadata"].pop("annotations", None)
    if doc["kind"] == "Secret":
        doc.pop("stringData", None)
    return doc


def differences(plain, helm, path=""):
    if isinstance(plain, dict) and isinstance(helm, dict):
        for key in sorted(set(plain) | set(helm)):
            where = f"{path}/{key}"
            if key not in helm:
                yield f"{where}: only in deploy/kubernetes: {json.dumps(plain[key])}"
            elif key not in plain:
                yield f"{where}: only in the chart: {json.dumps(helm[key])}"
            else:
                yield from differences(plain[key], helm[key], where)
    elif isinstance(plain, list) and isinstance(helm, list) and len(plain) == len(helm):
        for i, (p, h) in enumerate(zip(plain, helm)):
            yield from differences(p, h, f"{path}[{i}]")
    elif plain != helm:
        yield f"{path}: deploy/kubernetes has {json.dumps(plain)}, the chart {json.dumps(helm)}"


def main():
    rendered = objects(sys.argv[1:2])
    plain = objects(sys.argv[2:])
    plain.pop(("Namespace", "sextant"), None)
    problems = []
    for key in sorted(set(plain) | set(rendered)):
        if key not in rendered:
            problems.append(f"{key[0]} {key[1]}: not made by the chart")
        elif key not in plain:
            problems.append(f"{key[0]} {key[1]}: not in deploy/kubernetes")
        else:
            for d in differences(normalise(plain[key]), normalise(rendered[key])):
                problems.append(f"{key[0]} {key[1]}{d}")
    for p in problems:
        print(f"kubernetes-compare: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
