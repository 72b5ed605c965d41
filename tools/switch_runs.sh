#!/usr/bin/env bash
# Trains the separating experiments of "When should FT switch on?" (experiments/headroom/switch_v1.yaml, issue 66),
# setting by setting in the order given, seed by seed, one training process of one thread; resumable (run it again
# and it trains what is missing). FTCL_COMMIT=1 commits each run as it lands (its folder alone: no page reads it yet).
#
#   OMP_NUM_THREADS=1 FTCL_COMMIT=1 bash tools/switch_runs.sh                      # every setting, seeds 0-4
#   SEEDS="0 1" bash tools/switch_runs.sh "+both from 9 of 240"                   # some settings, some seeds
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
EXP=experiments/headroom/switch_v1.yaml
if [ $# -eq 0 ]; then set -- "+both from 9 of 120" "+both from 9 of 240" "+both from 18 of 120"; fi

commit_landed() {  # every finished run of the experiment not yet in git, each in its own commit
  [ -n "${FTCL_COMMIT:-}" ] || return 0
  for EVAL in results/cpu/H-switch-v1/*/seed*/eval.json; do
    [ -e "$EVAL" ] || continue
    git ls-files --error-unmatch "$EVAL" >/dev/null 2>&1 && continue
    DIR=$(dirname "$EVAL")
    for TRY in 1 2 3; do  # the index may be locked by a commit in the foreground: wait and try again
      if git add "$DIR" && git commit -q -m "Issue 66: H-switch-v1 ${DIR#results/cpu/H-switch-v1/} (tools/switch_runs.sh)" -- "$DIR"; then
        break
      fi
      sleep 20
    done
  done
}

for SETTING in "$@"; do
  for SEED in ${SEEDS:-0 1 2 3 4}; do
    "$PY" -m ftcl_core sweep "$EXP" --seeds "$SEED" --settings "$SETTING" &
    SWEEP=$!
    while kill -0 "$SWEEP" 2>/dev/null; do sleep 60; commit_landed; done
    wait "$SWEEP"
    commit_landed
  done
done
