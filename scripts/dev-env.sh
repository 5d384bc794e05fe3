#!/usr/bin/env bash
# Make ./.venv hold this project with its test extras, (re)installing only when
# setup.cfg or constraints.txt (the versions pinned) changed. Sourced by scripts/main.sh and scripts/test.sh, so the README's
# two commands work on a fresh machine. Prints the venv's python on stdout.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="${STORM_ZMQ_VENV:-$root/.venv}"
python=${PYTHON:-python3}

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "storm-zmq needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
    exit 1
fi
source "$root/scripts/venv.sh"
install() {
    "$1" -m pip install --upgrade pip && "$1" -m pip install -c "$root/constraints.txt" -e "$root[test]"
}
want=$(cat "$root/setup.cfg" "$root/pyproject.toml" "$root/constraints.txt" | sha256sum | cut -d' ' -f1)
ensure_venv "$python" "$venv" "$want" \
    "installing storm-zmq and its dependencies into $venv (first run takes a few minutes)" \
    storm-zmq install
echo "$venv/bin/python"
