#!/usr/bin/env bash
# The Debian packages the test suite needs, installed when missing (as root; as
# another user, a warning names them and the tests that need them say so):
# python3-venv for the venv, a Java runtime (17 or later: Spark 4 and ZooKeeper) for
# the Spark and cluster tests, zookeeper for the cluster tests, iproute2 for the
# network-namespace test, chromium (headless) for the web UI tests, valgrind for the
# instruction count of scripts/bench_executor.py --instructions, graphviz for
# `visualize -o graph.png`, tzdata for the time zones of
# tests/topology/test_value_types.py, pypy3 for the workers under PyPy
# (tests/runtime/test_launch.py; docs/pypy.md). Run by scripts/test.sh, so that the README's
# test command works on a fresh machine, and so by .ci/run.
set -euo pipefail
packages=(python3-venv default-jre-headless zookeeper iproute2 chromium valgrind graphviz tzdata pypy3)
command -v dpkg-query >/dev/null 2>&1 || exit 0  # not Debian: nothing to check
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "installing Debian packages the tests need: ${missing[*]}" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
else
    echo "warning: not root, cannot install ${missing[*]} (the tests that need them will say so)" >&2
fi
