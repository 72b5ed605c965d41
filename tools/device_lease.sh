#!/usr/bin/env bash
# The one prepared command for a lent GPU (issue "A GPU lease that decides things", item 7): at most 9 minutes.
#
#   bash tools/device_lease.sh "$OUT"            # on the GPU machine, from the repository root (the device tool's $OUT)
#   FTCL_LEASE_DRY=1 bash tools/device_lease.sh /tmp/lease   # the same script on a CPU, tiny sizes (the tests run it)
#
# 1. FT's draws on the device (tools/ft_draws_check.py, about a minute), then whether compiled runs agree with eager
#    (tools/compile_agreement.py, at most 150 s);
# 2. the GPU check's measuring parts not yet stored in results/gpu/ (environment, throughput with FT overhead per size, split batch-norm kernels,
#    the captured small-network step, the DataLoader anchor's profile, the ImageNet-100-shaped run end to end),
#    within a hard budget;
# 3. with the time left, the runs of tools/device_jobs.tsv (the largest pairs of "Is it the network?", then the
#    resolution point) through tools/device_sweep.py, whose finished run folders come back as
#    runs.tar.gz (unpack it in results/).
# Everything lands under OUT; each step's log beside its results. Needs only the GPU machine's packages.
set -u
OUT=${1:?usage: bash tools/device_lease.sh OUT_DIR}
TOTAL_S=${FTCL_LEASE_S:-540}
mkdir -p "$OUT"
export PYTHONPATH=.
START=$(date +%s)
left() { echo $(( TOTAL_S - ($(date +%s) - START) )); }
if [ -n "${FTCL_LEASE_DRY:-}" ]; then
  PY=${PYTHON:-.venv/bin/python}
  $PY tools/ft_draws_check.py --device cpu --out "$OUT/ft_draws" > "$OUT/ft_draws.log" 2>&1; A=$?
  $PY -m benchmarks.gpucheck --dry-run --out "$OUT/gpucheck" --budget-s 300 \
      --parts environment,throughput,kernels,captured,imagenet,loader > "$OUT/gpucheck.log" 2>&1; B=$?
  echo "lease (dry run): ft_draws_check rc=$A, gpucheck rc=$B; wrote $OUT"
  exit $(( A || B ))
fi
PY=${PYTHON:-python3}
timeout 90 $PY tools/ft_draws_check.py --out "$OUT/ft_draws" > "$OUT/ft_draws.log" 2>&1
echo "ft_draws_check rc=$? ($(left) s left)"
# does a compiled run agree with eager? (the 2026-12-04 lease: 4.9 % off within five steps; is it the random stream?)
timeout 150 $PY tools/compile_agreement.py --device cuda --full --fallback-random > "$OUT/compile_agreement.json" \
    2> "$OUT/compile_agreement.log"
echo "compile_agreement rc=$? ($(left) s left)"
# the check's parts next (their estimates: ~440 s), in this order, each only while results/gpu/ holds no finished
# result of it (FTCL_LEASE_PARTS=all measures them all again); the compiled parts stop at the budget in their own
# processes, and the report is rewritten after every part
ALL=environment,throughput,kernels,captured,imagenet,loader
PARTS=$( [ "${FTCL_LEASE_PARTS:-}" = all ] && echo $ALL || $PY -c "import sys
from benchmarks.gpucheck import report as r
done = r.latest_parts(r.stored_reports('results/gpu'))
print(','.join(p for p in sys.argv[1].split(',') if p == 'environment' or done.get(p, {}).get('status') not in ('measured', 'pass')))" $ALL)
BUDGET=$(( $(left) - 40 ))
[ "$BUDGET" -gt 450 ] && BUDGET=450
timeout $(( BUDGET + 30 )) $PY -m benchmarks.gpucheck --out "$OUT/gpucheck" --budget-s "$BUDGET" \
    --parts "${PARTS:-$ALL}" > "$OUT/gpucheck.log" 2>&1
echo "gpucheck ($PARTS) rc=$? ($(left) s left)"
DEADLINE=$(( $(left) - 25 ))  # packing the runs takes seconds
if [ "$DEADLINE" -gt 60 ]; then  # what is left goes to the job list
  $PY tools/device_sweep.py --out "$OUT/sweep" --deadline-s "$DEADLINE" --parallel 10 --set device=cuda \
      --jobs-file tools/device_jobs.tsv > "$OUT/sweep.log" 2>&1
  echo "device_sweep rc=$? ($(left) s left)"
fi
