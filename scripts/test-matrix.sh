#!/usr/bin/env bash
# The core's version matrix: `bash scripts/test-matrix.sh [leg ...] [-- pytest args]`.
#
# Runs the unit tests (tests/unit -m "not integration") of the core WITHOUT the flink extra in one
# virtual environment per leg, so the versions a plain `pip install serdes` user gets are tested
# (the main suite, scripts/test.sh, runs with PyFlink, which holds protobuf below 6):
#
#   newest  the newest protobuf 7.x and the newest confluent-kafka pyproject.toml allows
#   oldest  the floors pyproject.toml allows: confluent-kafka's ">=" release exactly, protobuf's
#           ">=" minor (4.25.x) with a grpcio-tools for it
#   ck-X.Y  (not run by default: name it) confluent-kafka X.Y's last patch release, the rest as pip
#           resolves it: the minors between the two ends, e.g. `ck-2.13 ck-2.14 ck-2.15`
#
# The requirements come from pyproject.toml (core dependencies + the test extra; grpcio-tools
# unbounded, since the test extra caps it for PyFlink's sake) plus the leg's pins. Each venv lives
# under ~/.cache/serdes/venvs/<leg>-<hash of python + requirements> and is built once (pip's wheel
# cache makes a rebuild quick); SERDES_MATRIX_REFRESH=1 rebuilds it (e.g. to pick up a new release
# for "newest"). serdes itself is not installed there: PYTHONPATH points at this checkout.
# The legs also split the two implementations: "newest" runs the native extension when it is built
# (PYTHONPATH holds this checkout's in-place build), "oldest" runs with SERDES_PURE_PYTHON=1, so the
# whole unit suite passes on pure Python too (the format tests compare both in every leg anyway).
# Tests that need PyFlink (tests/unit/test_flink_state_check.py, tests/flink/) skip in these two legs
# and run in scripts/test.sh's environment (apache-flink 2.2.1, the release the main suite runs on).
#
# The PyFlink legs (not run by default: name them) install the flink extra as well, with its capped
# grpcio-tools, and run the PyFlink tests (tests/flink, tests/cluster and the unit tests that import
# PyFlink; docs/flink.md, "Supported releases") with the native extension:
#
#   flink-newest  the newest apache-flink the flink extra allows (2.3.0 when this was written);
#                 SERDES_MATRIX_REFRESH=1 picks up a newer release
#   flink-oldest  the flink extra's ">=" release exactly (2.2.1), for a machine whose main
#                 environment resolved the extra to a newer one
#
# Measured on the 2-core machine (flink-newest, apache-flink 2.3.0): venv build 240 s cold (pip's
# download cache warm), 2 s warm; the leg's 620 tests in 409 s on two workers, nothing else running
# (tests/flink alone took 997 s when other jobs kept the load average at 20-60).
# SERDES_MATRIX_FLINK_TESTS replaces the PyFlink legs' test paths (e.g. "tests/flink" alone).
#
# The quixstreams leg (not run by default: name it) installs the quix extra, pinned to the
# quixstreams minor serdes.quix mirrors (3.28.x; pip resolves the confluent-kafka 2.12.x it allows),
# and runs tests/quix instead of the unit tests, with the native extension (docs/quix.md, "Tests"):
#
#   quix  serdes.quix against quixstreams' serializers, a quixstreams Application on the real
#         broker and registry, docs/quix.md's examples
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD

PY="${PYTHON:-python}"
legs=()
while (( $# )) && [[ $1 != -- ]]; do legs+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
(( ${#legs[@]} )) || legs=(newest oldest)
venv_root="${SERDES_MATRIX_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/serdes/venvs}"

# The requirement lines of one leg, one per line (pyproject.toml is the single source).
requirements() {
    "$PY" - "$1" <<'EOF'
import re, sys
try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

leg = sys.argv[1]
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
reqs = list(project["dependencies"]) + list(project["optional-dependencies"]["test"])
name = lambda r: re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower()
out = {}
for r in reqs:
    out.setdefault(name(r), r)  # the core's line wins over the test extra's copy


def floor(req):
    m = re.search(r">=\s*([0-9][0-9.]*)", req)
    if not m:
        sys.exit(f"no >= floor in {req!r}")
    return m.group(1)


def bare(req):  # the name and extras, without the version range
    return re.sub(r"(\])?\s*[<>=!~].*$", r"\1", req)


tools = out["grpcio-tools"]
if leg.startswith("flink-"):
    # the flink extra's lines win over the core's (its protobuf and grpcio caps are apache-beam's);
    # grpcio-tools keeps the test extra's cap, which is PyFlink's
    for r in project["optional-dependencies"]["flink"]:
        out[name(r)] = r
else:
    out["grpcio-tools"] = f"grpcio-tools>={floor(tools)}"  # newest; the test extra's cap is PyFlink's
if leg == "flink-newest":
    pass  # the extra's range as it stands: pip installs its newest release
elif leg == "flink-oldest":
    out["apache-flink"] = "apache-flink==" + floor(out["apache-flink"])
elif leg == "newest":
    out["protobuf"] = "protobuf>=7"
elif leg == "oldest":
    ck = out["confluent-kafka"]
    out["confluent-kafka"] = bare(ck) + "==" + floor(ck)  # the exact floor release
    out["protobuf"] = f"protobuf=={floor(out['protobuf'])}.*"  # the floor minor, its last patch
    out["grpcio-tools"] = f"grpcio-tools=={floor(tools)}.*"  # a protoc for that protobuf
    # the last release for protobuf < 6.33.5 (resolves at once instead of backtracking)
    out["googleapis-common-protos"] = "googleapis-common-protos<1.75.1"
elif leg == "quix":
    # the quix extra (quixstreams caps confluent-kafka itself: pip resolves the release it allows)
    for r in project["optional-dependencies"]["quix"]:
        out[name(r)] = r
    out["quixstreams"] = "quixstreams==3.28.*"  # the release serdes.quix mirrors (docs/quix.md)
elif re.fullmatch(r"ck-[0-9]+\.[0-9]+", leg):
    out["confluent-kafka"] = bare(out["confluent-kafka"]) + "==" + leg[3:] + ".*"  # that minor's last patch
else:
    sys.exit(f"unknown leg {leg!r} (legs: newest, oldest, quix, ck-X.Y, flink-newest, flink-oldest)")
print("\n".join(sorted(out.values())))
EOF
}

# Build (or reuse) the leg's venv; prints its path.
ensure_venv() {
    local leg=$1 reqs key dir lock_fd
    reqs=$(requirements "$leg")
    key=$( { "$PY" -c 'import sys; print(sys.version)'; echo "$reqs"; } | sha256sum | cut -c1-16)
    dir="$venv_root/$leg-$key"
    mkdir -p "$venv_root"
    # one builder per venv: a second run on the same machine waits instead of racing the build
    exec {lock_fd}>"$dir.lock"
    flock "$lock_fd"
    if [[ ${SERDES_MATRIX_REFRESH:-} == 1 || ! -f $dir/.serdes-complete ]]; then
        rm -rf "$dir"
        echo "== [$leg] creating $dir" >&2
        "$PY" -m venv "$dir"
        printf '%s\n' "$reqs" >"$dir/requirements.txt"
        "$dir/bin/python" -m pip install -q --disable-pip-version-check -r "$dir/requirements.txt" >&2
        touch "$dir/.serdes-complete"  # only a venv whose install finished is reused
    fi
    exec {lock_fd}>&-
    echo "$dir"
}

rc=0
for leg in "${legs[@]}"; do
    t0=$(date +%s)
    dir=$(ensure_venv "$leg")
    t1=$(date +%s)
    versions=$("$dir/bin/python" - "$leg" <<'EOF'
import importlib.metadata as m, importlib.util as u, sys
flink_leg = sys.argv[1].startswith("flink-")
assert (u.find_spec("pyflink") is not None) == flink_leg, "pyflink is installed in the PyFlink legs only"
names = ("protobuf", "confluent-kafka", "grpcio-tools", "fastavro") + (("apache-flink", "apache-beam", "grpcio") if flink_leg else ())
names += ("quixstreams",) if sys.argv[1] == "quix" else ()
print(" ".join(f"{p}=={m.version(p)}" for p in names))
EOF
)
    impl_env=()
    [[ $leg == oldest ]] && impl_env=(SERDES_PURE_PYTHON=1)
    # The PyFlink legs keep the JVM's bytecode verification, which the main suite's test JVMs skip
    # (tests/support/jvm_options.py): serdes' shim jar is verified on a MiniCluster and a cluster.
    [[ $leg == flink-* ]] && impl_env+=("JVM_ARGS=$("$dir/bin/python" -c 'from tests.support.jvm_options import VERIFYING_JVM_ARGS as a; print(a)')")
    if [[ $leg == flink-* ]]; then
        # shellcheck disable=SC2206  # a list of paths, split on spaces
        test_args=(${SERDES_MATRIX_FLINK_TESTS:-tests/flink tests/cluster tests/unit/test_pyflink_seam.py
            tests/unit/test_flink_speedups.py tests/unit/test_flink_pickles.py tests/unit/test_flink_state_check.py
            tests/unit/test_flink_imports.py tests/unit/test_cli_help.py tests/unit/test_error_pickling.py})
    elif [[ $leg == quix ]]; then
        test_args=(tests/quix)  # the quixstreams adapter's unit and integration tests
    else
        test_args=(tests/unit -m "not integration")
    fi
    impl=$(env "${impl_env[@]}" PYTHONPATH="$repo" "$dir/bin/python" -W ignore -c 'import serdes._native as n; print(n.implementation())')
    echo "== [$leg] $versions, $impl implementation (venv ready in $((t1 - t0))s)"
    # on SERDES_TEST_WORKERS pytest-xdist workers (default 2: the core legs' unit tests keep both
    # cores busy on their own; 0: one process)
    parallel=()
    (( ${SERDES_TEST_WORKERS:-2} > 0 )) && parallel=(-n "${SERDES_TEST_WORKERS:-2}" --dist loadgroup)
    set +e
    env "${impl_env[@]}" PYTHONPATH="$repo" "$dir/bin/python" -m pytest "${test_args[@]}" -q \
        -p no:cacheprovider --timeout="${SERDES_TEST_TIMEOUT:-900}" "${parallel[@]}" "$@"
    leg_rc=$?
    set -e
    (( leg_rc == 5 )) && leg_rc=1  # no tests collected is a failure
    echo "== [$leg] exit $leg_rc, tests in $(( $(date +%s) - t1 ))s"
    (( leg_rc == 0 )) || rc=$leg_rc
done
exit $rc
