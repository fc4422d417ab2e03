#!/bin/sh
# e2e-lane: cluster
# Runs fakekube's own unit tests (tests/fakekube/test_fakekube.py): pagination
# snapshots, 410, bookmarks, selectors, KubeVirt state machines, faults, WebSocket,
# and a reflector that must converge on /fake/state under churn and faults.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v openssl >/dev/null 2>&1 || { echo "SKIP: openssl missing"; exit 77; }
PY=${FAKEKUBE_PYTHON:-$(command -v python3 || echo /usr/bin/python3)}
exec "$PY" "$top/tests/fakekube/test_fakekube.py"
