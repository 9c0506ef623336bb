#!/usr/bin/env bash
# Checks the Kubernetes manifests of deploy/kubernetes/ against the API's
# own schemas (the PyPI package kubernetes-validate bundles them; no
# cluster is needed), strictly: an unknown or misspelt field fails.
# scripts/setup.sh installs the pinned version in a virtual environment.
#
# The Helm chart (deploy/helm/sextant) is not rendered here: helm is in no
# package registry this machine reaches (docs/deploy.md, "Kubernetes").
set -euo pipefail
cd "$(dirname "$0")/.."

KUBERNETES_VALIDATE_VERSION=1.37.0
venv="${SEXTANT_TEST_DATA:-/var/cache/sextant-test}/kubernetes-validate-$KUBERNETES_VALIDATE_VERSION"
validate="$venv/bin/kubernetes-validate"
if [ ! -x "$validate" ]; then
    echo "kubernetes-validate.sh: $validate is missing; run scripts/setup.sh" >&2
    exit 1
fi
# The oldest Kubernetes the manifests are for (mixed UDP and TCP on one
# LoadBalancer Service is stable from 1.26), and the newest the package
# knows.
for version in 1.26.0 "$KUBERNETES_VALIDATE_VERSION"; do
    "$validate" --strict --quiet --kubernetes-version "$version" deploy/kubernetes/*.yaml
done
echo "kubernetes-validate.sh: deploy/kubernetes/*.yaml valid for Kubernetes 1.26.0 and $KUBERNETES_VALIDATE_VERSION" >&2
