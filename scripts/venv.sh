# Sourced by scripts/dev-env.sh and scripts/pypy-env.sh: the one way this project
# makes a venv and keeps it installed.
#
# ensure_venv PYTHON VENV WANT ANNOUNCE WHAT INSTALL: make VENV with PYTHON if it has
# none, and run `INSTALL VENV_PYTHON` (a shell function) when WANT, a hash of what
# the venv is made from, differs from the one of its last good install: ANNOUNCE
# says so on stderr; a failed install shows the end of its log, names WHAT, and
# exits 1.
ensure_venv() {
    local python=$1 venv=$2 want=$3 announce=$4 what=$5 install=$6
    if [ ! -x "$venv/bin/python" ]; then
        echo "creating $venv" >&2
        "$python" -m venv "$venv" >&2
    fi
    local stamp="$venv/.storm-zmq-installed"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "$announce" >&2
        local log="$venv/install.log"
        if ! "$install" "$venv/bin/python" > "$log" 2>&1; then
            tail -n 40 "$log" >&2
            echo "installing $what failed; the whole log is $log" >&2
            exit 1
        fi
        echo "$want" > "$stamp"
    fi
}
