#!/usr/bin/env bash
# Build the operator's container image from the Dockerfile, as it is, without Docker:
# buildah builds it, skopeo exports it as an OCI archive that any cluster can import
# (`ctr -n k8s.io images import`, `kind load image-archive`, `k3s ctr images import`, ...).
#
#   scripts/build_image.sh [IMAGE] [OUT.tar]        (or: make image)
#
#   IMAGE         default localhost/endpointslice-operator:<version of pyproject.toml>
#   OUT.tar       default endpointslice-operator.tar (in the current directory)
#   PYTHON_IMAGE  the base image, the Dockerfile's only build argument given here (unset: the
#                 Dockerfile's own default, python:3.11.13-slim-bookworm, pulled by buildah)
#
# Needs buildah and skopeo (Debian: apt-get install -y buildah skopeo), as root or with
# rootless buildah set up. The build's RUN steps see the machine's CA bundle and /etc/pip.conf
# (bind-mounted read-only, only during RUN, never committed; left out when absent), for
# networks that intercept TLS or a pip mirror. CONTAINERS_STORAGE_CONF chooses buildah's storage.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "build_image: $*" >&2; exit 1; }
for tool in buildah skopeo; do
  command -v "$tool" >/dev/null 2>&1 || die "needs $tool (Debian: apt-get install -y buildah skopeo)"
done
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/pyproject.toml" | head -1)
image=${1:-localhost/endpointslice-operator:$version}
out=${2:-endpointslice-operator.tar}
[[ $out == /* ]] || out=$PWD/$out

# buildah's overlay storage keeps a bind mount of its home while in use: released on every exit.
graphroot=$(buildah info --format '{{.store.GraphRoot}}' 2>/dev/null || true)
release() {
  buildah umount --all >/dev/null 2>&1 || true
  if [[ -n $graphroot ]]; then
    { findmnt -rn -o TARGET | grep -F "$graphroot/" || true; } | sort -r |
      while read -r m; do umount "$m" 2>/dev/null || true; done
  fi
}
trap release EXIT

mounts=()
for f in /etc/ssl/certs/ca-certificates.crt /etc/pip.conf; do
  [[ -e $f ]] && mounts+=(-v "$f:$f:ro")
done
args=()
[[ -z ${PYTHON_IMAGE:-} ]] || args+=(--build-arg "PYTHON_IMAGE=$PYTHON_IMAGE")
echo "build_image: building $image from $root/Dockerfile${PYTHON_IMAGE:+ on $PYTHON_IMAGE}" >&2
(cd "$root" && buildah bud --quiet --isolation chroot --layers=false \
  ${mounts[@]+"${mounts[@]}"} ${args[@]+"${args[@]}"} \
  -t "$image" -f Dockerfile . >/dev/null)
mkdir -p "$(dirname "$out")"
skopeo copy --quiet "containers-storage:$image" "oci-archive:$out.part:$image"
mv -f "$out.part" "$out"
echo "build_image: $out ($image)" >&2
echo "$out"
