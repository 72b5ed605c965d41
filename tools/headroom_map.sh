#!/usr/bin/env bash
# Trains the length x start map on the task with headroom (experiments/headroom/map_v1.yaml; issue 50, item 3), one
# training process at a time, in the order that lands whole comparisons first: the shortest length first, and at
# each length seed by seed, the five arms of a seed together. Resumable: run it again and it trains what is missing
# (a run interrupted mid-way resumes from its last epoch). Optional arguments: the lengths to train (default 30 120 240).
#
#   bash tools/headroom_map.sh              # all of it (~20 h on 2 CPU cores)
#   bash tools/headroom_map.sh 30           # the 30-epoch map only
#   FTCL_COMMIT=1 bash tools/headroom_map.sh  # also commit each run as it lands (its folder, results/headroom.csv and
#       the README's findings block, whose numbers it moves),
#       unless the book's words bound to the map no longer hold with it (then it stays on disk until they are rewritten)
#   PARALLEL=2 bash tools/headroom_map.sh 120   # two processes of one thread each (sweep --parallel 2): about 10 %
#       more runs an hour on 2 cores (results/screens/2026-12-03_parallel-threads.md), both cores busy
#   SEEDS="3" ARMS="baseline late" bash tools/headroom_map.sh 240   # some seeds, some arms, in the order given (arms:
#       baseline, first = +both from the first step, late = +both from 30 %, neg = +neg, poslate = +pos from 30 %);
#       a late arm forks from its baseline's state at 30 % where the baseline kept it (a second stream beside the first)
set -euo pipefail
cd "$(dirname "$0")/.."
LENGTHS=${*:-30 120 240}
# shellcheck source=tools/landed.sh
source tools/landed.sh

for L in $LENGTHS; do
  S=$(( L * 3 / 10 ))
  SETTINGS=()  # the arms of ARMS at this length, in the order given
  for ARM in ${ARMS:-baseline first late neg poslate}; do
    case $ARM in
      baseline) SETTINGS+=("baseline $L") ;; first) SETTINGS+=("+both $L") ;; late) SETTINGS+=("+both from $S of $L") ;;
      neg) SETTINGS+=("+neg $L") ;; poslate) SETTINGS+=("+pos from $S of $L") ;;
      *) echo "unknown arm '$ARM' in ARMS: use baseline, first, late, neg or poslate" >&2; exit 2 ;;
    esac
  done
  # PARALLEL=2: one sweep of every seed, two processes of one thread (sweep --parallel), else seed by seed
  for SEED_SET in $( [ "${PARALLEL:-1}" -gt 1 ] && echo "${SEEDS:-0 1 2 3 4}" | tr ' ' , || echo "${SEEDS:-0 1 2 3 4}" ); do
    # the five arms in one sweep, so that the late starts fork from the baseline's state at epoch S (~15 % saved);
    # each run is committed as it lands: a session that stops mid-seed loses at most the run in training
    # shellcheck disable=SC2046
    train_and_commit results/cpu/H-map-v1 "Issue 50: H-map-v1" tools/headroom_map.sh -- \
      "$PY" -m ftcl_core sweep experiments/headroom/map_v1.yaml --seeds $(echo "$SEED_SET" | tr , ' ') \
      --parallel "${PARALLEL:-1}" --settings "${SETTINGS[@]}"
  done
done
