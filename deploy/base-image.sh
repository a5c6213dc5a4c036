#!/usr/bin/env bash
# Builds the Debian bookworm base image (python3 and venv, nothing else) without a registry:
# debootstrap --variant=minbase into a folder, python3 added in a chroot, then `docker import`.
# Usage: deploy/base-image.sh [TAG]   (default leveret-base:bookworm)
set -euo pipefail
tag=${1:-leveret-base:bookworm}
if docker image inspect "$tag" >/dev/null 2>&1; then
    echo "$tag is already there"
    exit 0
fi
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
root=$(mktemp -d /var/tmp/leveret-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
chroot "$root" apt-get update -qq
DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -qq --no-install-recommends \
    python3 python3-venv ca-certificates >/dev/null
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/usr/share/doc/* \
    "$root"/usr/share/man/* "$root"/usr/share/locale/*
tar -C "$root" -c . | docker import \
    --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' - "$tag" >/dev/null
echo "built $tag"
