#!/usr/bin/env bash
# The main job (the README's run command): the word count topology in local mode,
# two worker processes over the configured transport, for 20 seconds. Extra
# arguments go to `storm-zmq run` (e.g. --transport tcp, -t 0 to run until Ctrl-C).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=$(bash "$root/scripts/dev-env.sh")
cd "$root"
exec "$python" -m storm_zmq.cli.main run topologies/wordcount.py -w 2 -t 20 "$@"
