#!/usr/bin/env bash
# Builds Sextant's container image from packaging/Containerfile (FROM
# scratch: nothing is fetched): a static glibc release build of the binary,
# a build context assembled in target/container-context, then `podman build`
# (or `buildah bud`). Prints the image's name on stdout (the last line);
# everything else goes to stderr. docs/deploy.md, "Container image".
#
# Only the release build with BUILD_ONLY=1 (prints the binary's path): the
# test crates/sextant/tests/container.rs runs that exact binary.
#
# IMAGE=NAME:TAG names the image (default localhost/sextant:VERSION).
# Needs podman or buildah (Debian: apt-get install podman), and setcap
# (libcap2-bin) for the binary's file capability.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-gnu
# A static glibc binary: the image has no libc. getaddrinfo(3) in a static
# glibc still loads NSS modules at run time; the image has none, so names
# resolve from /etc/hosts and DNS only (docs/deploy.md).
RUSTFLAGS='-C target-feature=+crt-static' \
    cargo build --release --locked --target "$target" -p sextant >&2
binary="target/$target/release/sextant"
if [ "${BUILD_ONLY:-0}" = 1 ]; then
    echo "$binary"
    exit 0
fi

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
image="${IMAGE:-localhost/sextant:$version}"

context=target/container-context
rm -rf "$context"
mkdir -p "$context/var-lib-sextant"
chmod 0750 "$context/var-lib-sextant"
cp "$binary" "$context/sextant"
cp packaging/container/sextant.conf "$context/sextant.conf"
# The one user of the image; no shell, no home, no password.
echo 'sextant:x:5353:5353:Sextant GSLB:/var/lib/sextant:/usr/bin/sextant' >"$context/passwd"
echo 'sextant:x:5353:' >"$context/group"
# Port 53 as a non-root user: the capability on the file, raised at exec
# when the container's bounding set keeps NET_BIND_SERVICE.
if command -v setcap >/dev/null 2>&1; then
    setcap cap_net_bind_service=ep "$context/sextant"
else
    echo "container.sh: setcap is missing (libcap2-bin); the binary has no file capability" >&2
fi

if command -v podman >/dev/null 2>&1; then
    podman build --file packaging/Containerfile --tag "$image" "$context" >&2
elif command -v buildah >/dev/null 2>&1; then
    buildah bud --file packaging/Containerfile --tag "$image" "$context" >&2
else
    echo "container.sh: neither podman nor buildah is installed (apt-get install podman)" >&2
    exit 1
fi
echo "$image"
