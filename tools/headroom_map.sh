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
PY=${PYTHON:-.venv/bin/python}
LENGTHS=${*:-30 120 240}

words_hold() {  # the words bound to the map (chapter 11's checks, the findings and README's block) hold on the disk's runs
  # only the checks chapter 11 names: a check written ahead of its runs (a length still training) binds nothing yet
  "$PY" -c "import sys
from ftcl_core.study import headroom as H
bad = H.bound_failures(H.facts(*H.load()))
print(*(f'{k}: {v}' for k, v in bad.items()), sep='\n', file=sys.stderr)
sys.exit(bool(bad))" && "$PY" tools/readme_findings.py --check >/dev/null
}

HELD=""  # runs left uncommitted because the words bound to the map no longer hold with them
commit_landed() {  # every finished run of the map not yet in git, each in its own commit with results/headroom.csv
  [ -n "${FTCL_COMMIT:-}" ] || return 0
  # the checks below read the working tree's words and code: while those hold uncommitted edits, a commit could pair
  # a run (and the README it rewrites) with words HEAD does not have; wait for them to be committed
  if ! git diff --quiet HEAD -- book ftcl_core tools/readme_findings.py ':!book/_static/phase_diagram.png'; then
    echo "landed runs wait: book/, ftcl_core/ or tools/readme_findings.py hold uncommitted edits" >&2
    return 0
  fi
  for EVAL in results/cpu/H-map-v1/*/seed*/eval.json; do
    [ -e "$EVAL" ] || continue
    git ls-files --error-unmatch "$EVAL" >/dev/null 2>&1 && continue
    DIR=$(dirname "$EVAL")
    case " $HELD " in *" $DIR "*) continue ;; esac
    "$PY" -c "from ftcl_core.study.diagnosis import HEADROOM_CSV, headroom_rows, write_diagnosis_csv as w
w(headroom_rows(), HEADROOM_CSV)" || echo "results/headroom.csv not rewritten: run python -m ftcl_core summary" >&2
    # the README's findings block carries the map's numbers: rewrite it (only while every findings check passes)
    "$PY" tools/readme_findings.py >/dev/null || echo "README.md's findings not rewritten: a findings check fails" >&2
    if ! words_hold; then  # a commit now would leave the book failing its build: keep the run on disk, uncommitted
      echo "$DIR not committed: the text bound to the map must be rewritten first (chapter 11, book/findings.md;" \
           "then python -m ftcl_core summary and commit the run with the text)" >&2
      HELD="$HELD $DIR"
      continue
    fi
    for TRY in 1 2 3; do  # the index may be locked by a commit in the foreground: wait and try again
      # the README's block and the phase diagram it shows (book/_static/phase_diagram.png) move with the map's rows
      if git add "$DIR" results/headroom.csv README.md book/_static/phase_diagram.png \
         && git commit -q -m "Issue 50: H-map-v1 ${DIR#results/cpu/H-map-v1/} (tools/headroom_map.sh)" -- "$DIR" \
            results/headroom.csv README.md book/_static/phase_diagram.png; then
        break
      fi
      sleep 20
    done
  done
}

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
    "$PY" -m ftcl_core sweep experiments/headroom/map_v1.yaml --seeds $(echo "$SEED_SET" | tr , ' ') \
      --parallel "${PARALLEL:-1}" --settings "${SETTINGS[@]}" &
    SWEEP=$!
    while kill -0 "$SWEEP" 2>/dev/null; do sleep 60; commit_landed; done
    wait "$SWEEP"
    commit_landed
  done
done
