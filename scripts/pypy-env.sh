#!/usr/bin/env bash
# Make ./.venv-pypy: a PyPy 3 venv with what a worker process imports (pyzmq,
# msgpack, PyYAML, kazoo), for running workers under PyPy (`worker.python`,
# docs/pypy.md). storm-zmq itself and the topology's code reach the workers on
# PYTHONPATH, so nothing of this project is installed here. Reinstalls only when
# constraints-pypy.txt changed. Needs the Debian package pypy3 (scripts/system-deps.sh).
# Prints the venv's python on stdout.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="${STORM_ZMQ_PYPY_VENV:-$root/.venv-pypy}"
pypy=${PYPY:-pypy3}

if ! command -v "$pypy" >/dev/null 2>&1; then
    echo "no $pypy on PATH: install PyPy 3 (Debian: apt-get install pypy3) or set PYPY=/path/to/pypy3" >&2
    exit 1
fi
source "$root/scripts/venv.sh"
install() {
    "$1" -m pip install -r "$root/constraints-pypy.txt"
}
want=$(sha256sum "$root/constraints-pypy.txt" | cut -d' ' -f1)
ensure_venv "$pypy" "$venv" "$want" "installing the workers' dependencies into $venv" \
    "into $venv" install
echo "$venv/bin/python"
