#!/bin/sh
# Install skill-registry from its wheel into a virtual environment of its own.
#
#   deploy/install.sh PREFIX WHEEL
#
# The Dockerfile runs this script, and tests/packaging/test_wheel.py runs it on the wheel it
# builds, so the image's install steps are exercised on every `make test`. PYTHON picks the
# interpreter (default python3); pip's own settings (index, cache) come from the environment.
set -eu
if [ "$#" -ne 2 ]; then
  echo "usage: $0 PREFIX WHEEL" >&2
  exit 2
fi
prefix=$1
wheel=$2
"${PYTHON:-python3}" -m venv "$prefix"
# With the `fast-scan` extra: Hyperscan lists the content check's literals where its wheels
# exist (on other platforms the extra installs nothing and RE2 does it).
"$prefix/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel[fast-scan]"
# Fails unless the console script, its imports and the packaged migrations are all there.
"$prefix/bin/python" -c 'from registry.db.migrate import head_revision; head_revision()'
"$prefix/bin/skillreg" --version
