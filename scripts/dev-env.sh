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
if [ ! -x "$venv/bin/python" ]; then
    echo "creating $venv" >&2
    "$python" -m venv "$venv" >&2
fi
stamp="$venv/.storm-zmq-installed"
want=$(cat "$root/setup.cfg" "$root/pyproject.toml" "$root/constraints.txt" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "installing storm-zmq and its dependencies into $venv (first run takes a few minutes)" >&2
    log="$venv/install.log"
    if ! { "$venv/bin/python" -m pip install --upgrade pip \
           && "$venv/bin/python" -m pip install -c "$root/constraints.txt" -e "$root[test]"; } > "$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "installing storm-zmq failed; the whole log is $log" >&2
        exit 1
    fi
    echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
