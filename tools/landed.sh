# Sourced by tools/headroom_map.sh and tools/switch_runs.sh: trains one sweep and commits each run as it lands.
#
#   train_and_commit RESULTS_DIR "Issue N: EXP" SCRIPT -- COMMAND...   # runs COMMAND; every 60 s, and at its end,
#       commits each finished run under RESULTS_DIR not yet in git (when FTCL_COMMIT is set), with results/headroom.csv,
#       the README's findings block and the phase diagram, whose numbers the map's runs move
#
# A run is held back (left on disk, uncommitted) while book/, ftcl_core/ or tools/readme_findings.py hold uncommitted
# edits (a commit could pair it with words HEAD does not have), and when the words bound to the map no longer hold
# with it (then rewrite chapter 11 and book/findings.md, run python -m ftcl_core summary, commit the run with the text).
PY=${PYTHON:-.venv/bin/python}
HELD=""  # runs left uncommitted because the words bound to the map no longer hold with them

words_hold() {  # the words bound to the map (chapter 11's checks, the findings and README's block) hold on the disk's runs
  # only the checks chapter 11 names: a check written ahead of its runs (a length still training) binds nothing yet
  "$PY" -c "import sys
from ftcl_core.study import headroom as H
bad = H.bound_failures(H.facts(*H.load()))
print(*(f'{k}: {v}' for k, v in bad.items()), sep='\n', file=sys.stderr)
sys.exit(bool(bad))" && "$PY" tools/readme_findings.py --check >/dev/null
}

commit_landed() {  # $1 results folder, $2 message prefix, $3 the script's name: each finished run not in git, one commit each
  [ -n "${FTCL_COMMIT:-}" ] || return 0
  if ! git diff --quiet HEAD -- book ftcl_core tools/readme_findings.py ':!book/_static/phase_diagram.png'; then
    echo "landed runs wait: book/, ftcl_core/ or tools/readme_findings.py hold uncommitted edits" >&2
    return 0
  fi
  for EVAL in "$1"/*/seed*/eval.json; do
    [ -e "$EVAL" ] || continue
    git ls-files --error-unmatch "$EVAL" >/dev/null 2>&1 && continue
    DIR=$(dirname "$EVAL")
    case " $HELD " in *" $DIR "*) continue ;; esac
    "$PY" -c "from ftcl_core.study.diagnosis import HEADROOM_CSV, headroom_rows, write_diagnosis_csv as w
w(headroom_rows(), HEADROOM_CSV)" || echo "results/headroom.csv not rewritten: run python -m ftcl_core summary" >&2
    "$PY" tools/readme_findings.py >/dev/null || echo "README.md's findings not rewritten: a findings check fails" >&2
    if ! words_hold; then  # a commit now would leave the book failing its build: keep the run on disk, uncommitted
      echo "$DIR not committed: the text bound to the map must be rewritten first (chapter 11, book/findings.md;" \
           "then python -m ftcl_core summary and commit the run with the text)" >&2
      HELD="$HELD $DIR"
      continue
    fi
    local FILES=("$DIR" results/headroom.csv README.md book/_static/phase_diagram.png)
    for TRY in 1 2 3; do  # the index may be locked by a commit in the foreground: wait and try again
      if git add "${FILES[@]}" && git commit -q -m "$2 ${DIR#"$1"/} ($3)" -- "${FILES[@]}"; then
        break
      fi
      sleep 20
    done
  done
}

train_and_commit() {  # $1 results folder, $2 message prefix, $3 script name, --, then the training command
  local RESULTS=$1 MESSAGE=$2 SCRIPT=$3
  shift 4
  "$@" &
  local SWEEP=$!
  while kill -0 "$SWEEP" 2>/dev/null; do sleep 60; commit_landed "$RESULTS" "$MESSAGE" "$SCRIPT"; done
  wait "$SWEEP"
  commit_landed "$RESULTS" "$MESSAGE" "$SCRIPT"
}
