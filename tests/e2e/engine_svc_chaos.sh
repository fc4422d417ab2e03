#!/bin/bash
# Chaos for the engine service (issue 15, "Chaos": at least 50 trials of kill -9 at a random moment of apply,
# start, stop with a grace period, restart, delete and migrate): engine_chaos.sh's trials (40 here), with the
# requests going through a running `kvcon engine serve` and the SERVICE killed -9 at a random moment; a new service
# then converges by itself (see CHAOS_TARGET=service in engine_chaos.sh). Then 12 migrate trials
# (engine_svc_chaos_mig.bash: the two-host lab, a VirtualMachineInstanceMigration, the service killed -9 in the
# middle of it). CHAOS_SEED=N replays a run (both parts), CHAOS_TRIALS and CHAOS_MIG_TRIALS set the counts.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export CHAOS_SEED=${CHAOS_SEED:-$(($(date +%s) % 32768))}
CHAOS_TARGET=service CHAOS_TRIALS=${CHAOS_TRIALS:-40} "$HERE/engine_chaos.sh" "$@"
exec "$HERE/engine_svc_chaos_mig.bash" "$@"
