#!/bin/bash
# The convergence test at full size: 10 runs of 60 s windows (churn 200/s, fault rate 5%); each run's printed
# stores must equal fakekube's final state exactly. About 13 minutes.
top=$(cd "$(dirname "$0")/../.." && pwd)
CONVERGE_SECONDS=${CONVERGE_SECONDS:-60} CONVERGE_RUNS=${CONVERGE_RUNS:-10} exec bash "$top/tests/e2e/get_converge.sh"
