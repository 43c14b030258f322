#!/bin/sh
# Install skill-registry from its wheel, with the locked dependencies, into a virtual
# environment of its own.
#
#   UV=/path/to/uv deploy/install.sh PREFIX WHEEL REQUIREMENTS
#
# REQUIREMENTS is deploy/requirements.txt: the runtime dependencies as uv.lock pins them,
# every one with its hashes (`make lock` writes it, `make lint` checks it against the lock).
# They are installed exactly as pinned, and only if their files match the hashes; then the
# wheel, without resolving anything more, and `uv pip check` confirms the pins satisfy the
# wheel's ranges.
#
# UV is the uv executable, the version the Makefile pins (the Dockerfile installs it for
# this step only). uv installs from its cache when it holds the files, still checking each
# against its hash; pip would download them again.
#
# The Dockerfile runs this script, and tests/packaging/test_wheel.py runs it on the wheel it
# builds, so the image's install steps are exercised on every `make test`. PYTHON picks the
# interpreter of the environment (default python3); uv's own settings (index, cache) come
# from the environment.
set -eu
if [ "$#" -ne 3 ] || [ -z "${UV:-}" ]; then
  echo "usage: UV=/path/to/uv $0 PREFIX WHEEL REQUIREMENTS" >&2
  exit 2
fi
prefix=$1
wheel=$2
requirements=$3
"${PYTHON:-python3}" -m venv --without-pip "$prefix"
uvpip() { "$UV" pip "$@" --python "$prefix/bin/python"; }
uvpip install --quiet --require-hashes --no-deps --only-binary :all: -r "$requirements"
uvpip install --quiet --no-deps "$wheel"
uvpip check --quiet
# Fails unless the console script, its imports and the packaged migrations are all there.
"$prefix/bin/python" -c 'from registry.db.migrate import head_revision; head_revision()'
"$prefix/bin/skillreg" --version
