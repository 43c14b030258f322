#!/usr/bin/env bash
# List the commits between two tags as "hash<TAB>subject<TAB>author", oldest first.
set -euo pipefail
from=${1:?usage: collect.sh FROM_TAG TO_TAG}
to=${2:?usage: collect.sh FROM_TAG TO_TAG}
git log --reverse --no-merges --format='%h%x09%s%x09%an' "${from}..${to}"
