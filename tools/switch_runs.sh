#!/usr/bin/env bash
# Trains the separating experiments of "When should FT switch on?" (experiments/headroom/switch_v1.yaml, issue 66),
# setting by setting in the order given, seed by seed, one training process of one thread; resumable (run it again
# and it trains what is missing). FTCL_COMMIT=1 commits each run as it lands (tools/landed.sh).
#
#   OMP_NUM_THREADS=1 FTCL_COMMIT=1 bash tools/switch_runs.sh                      # every setting, seeds 0-4
#   SEEDS="0 1" bash tools/switch_runs.sh "+both from 9 of 240"                   # some settings, some seeds
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/landed.sh
source tools/landed.sh
EXP=experiments/headroom/switch_v1.yaml
if [ $# -eq 0 ]; then set -- "+both from 9 of 120" "+both from 9 of 240" "+both from 18 of 120"; fi

for SETTING in "$@"; do
  for SEED in ${SEEDS:-0 1 2 3 4}; do
    train_and_commit results/cpu/H-switch-v1 "Issue 66: H-switch-v1" tools/switch_runs.sh -- \
      "$PY" -m ftcl_core sweep "$EXP" --seeds "$SEED" --settings "$SETTING"
  done
done
