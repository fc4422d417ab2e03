#!/bin/bash
# Chaos for the engine service (issue 15, "Chaos"): engine_chaos.sh's 50 trials, with the requests going through a
# running `kvcon engine serve` and the SERVICE killed -9 at a random moment; a new service then converges by
# itself (see CHAOS_TARGET=service in engine_chaos.sh). Then the migrate trials (engine_svc_chaos_mig.bash: the
# two-host lab, a VirtualMachineInstanceMigration, the service killed -9 in the middle of it). CHAOS_SEED=N replays
# a run (both parts), CHAOS_TRIALS and CHAOS_MIG_TRIALS set the counts.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export CHAOS_SEED=${CHAOS_SEED:-$(($(date +%s) % 32768))}
CHAOS_TARGET=service "$HERE/engine_chaos.sh" "$@"
exec "$HERE/engine_svc_chaos_mig.bash" "$@"
