#!/usr/bin/env bash
# The whole test suite (the README's test command). Extra arguments go to pytest.
#
# Pytest processes share the tests (pytest-xdist), two more than the CPUs: most of
# a test's time is spent waiting for processes it started, a timeout, ZooKeeper (the
# suite keeps 2 cores about 40 % busy with two processes), so on 2 cores three
# processes take about 0.85 of the time two do, and four about 0.92 of what three
# do (docs/benchmarks.md, sessions 31 and 36). A test that measures CPU time, rates
# or timing windows is marked `serial` and runs with no other test beside it
# (tests/conftest.py). STORM_ZMQ_TEST_PROCESSES sets how many (0 or 1 runs them in
# this one process, as does -n 0).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/system-deps.sh"
python=$(bash "$root/scripts/dev-env.sh")
# .venv-pypy for the PyPy worker tests, before the test processes share it
if command -v pypy3 >/dev/null 2>&1; then bash "$root/scripts/pypy-env.sh" >/dev/null; fi
cd "$root"
cpus=$(nproc 2>/dev/null || echo 1)
processes=${STORM_ZMQ_TEST_PROCESSES:-$((cpus + 2))}
if [ "$processes" -gt 1 ]; then
    exec "$python" -m pytest -n "$processes" "$@"
fi
exec "$python" -m pytest "$@"
