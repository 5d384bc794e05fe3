#!/usr/bin/env bash
# The whole test suite (the README's test command). Extra arguments go to pytest.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/system-deps.sh"
python=$(bash "$root/scripts/dev-env.sh")
cd "$root"
exec "$python" -m pytest "$@"
