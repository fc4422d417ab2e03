#!/bin/bash
# Chaos for the engine service (issue 15, "Chaos"): engine_chaos.sh's 50 trials, with the requests going through a
# running `kvcon engine serve` and the SERVICE killed -9 at a random moment; a new service then converges by
# itself (see CHAOS_TARGET=service in engine_chaos.sh). CHAOS_SEED=N replays a run, CHAOS_TRIALS sets the count.
CHAOS_TARGET=service exec "$(dirname "$0")/engine_chaos.sh" "$@"
