#!/usr/bin/env bash
# The main job (the README's run command): until the topology runtime lands, the
# zmq-vs-tcp transport benchmark in its quick form. Extra arguments go to it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=$(bash "$root/scripts/dev-env.sh")
cd "$root"
exec "$python" scripts/bench_transport.py --quick "$@"
