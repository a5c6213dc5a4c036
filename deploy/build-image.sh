#!/usr/bin/env bash
# Builds Leveret's image on a machine that reaches package indexes but no container registry:
# the Debian base from deploy/base-image.sh, wheels made here with pip, then deploy/Dockerfile.
# Usage: deploy/build-image.sh [TAG] [PYTHON]   (defaults: leveret:local, python3)
# EXTRAS (default fast) chooses the package's extras: fast,demo for the compose stack.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-leveret:local}
python=${2:-python3}
extras=${EXTRAS:-fast}
base=leveret-base:bookworm
deploy/base-image.sh "$base"
rm -f deploy/wheels/*.whl
"$python" -m pip wheel -q --disable-pip-version-check --wheel-dir deploy/wheels \
    ".[$extras]" 'setuptools>=68' 2>&1 | grep -v "is ignored: it is neither" || true
docker build -q -f deploy/Dockerfile --build-arg "BASE=$base" \
    --build-arg "PIP_ARGS=--no-index --find-links /wheels" --build-arg "EXTRAS=$extras" \
    -t "$tag" . >/dev/null
echo "built $tag"
