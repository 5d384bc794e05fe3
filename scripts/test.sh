#!/usr/bin/env bash
# The whole test suite (the README's test command). Extra arguments go to pytest.
#
# Two pytest processes share the tests (pytest-xdist): most of a test's time is
# spent waiting for processes it started, a timeout, ZooKeeper, so two at once take
# about 0.6 of the time one alone does on 2 cores. A test that measures CPU time,
# rates or timing windows is marked `serial` and runs with no other test beside
# it (tests/conftest.py). STORM_ZMQ_TEST_PROCESSES sets how many
# (at most the CPUs; 0 or 1 runs them in this one process, as does -n 0).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/system-deps.sh"
python=$(bash "$root/scripts/dev-env.sh")
cd "$root"
cpus=$(nproc 2>/dev/null || echo 1)
processes=${STORM_ZMQ_TEST_PROCESSES:-2}
if [ "$processes" -gt "$cpus" ]; then
    processes=$cpus
fi
if [ "$processes" -gt 1 ]; then
    exec "$python" -m pytest -n "$processes" "$@"
fi
exec "$python" -m pytest "$@"
