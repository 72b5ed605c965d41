#!/usr/bin/env bash
# Train the cpu profile's reference runs (issues #4 and #5) in priority order; every sweep skips finished
# runs and copies a finished run with the same config (the baselines several tables share), so running
# this again after an interruption resumes where it stopped.  Two concurrent 2-thread trainings on a
# 2-core machine are ~8x slower each; on 2 cores run `THREADS=1 STREAM=a` and `THREADS=1 STREAM=b` side
# by side (disjoint experiments), or one `STREAM=all` with 2 threads.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export OMP_NUM_THREADS=${THREADS:-2}
sweep() { "$PY" -m ftcl_core sweep "$@" --profile cpu || echo "sweep failed: $*" >&2; }
STREAM=${STREAM:-all}  # a | b | all
if [ "$STREAM" != b ]; then
  sweep experiments/table7_ft_v2.yaml
  sweep experiments/table7_ft_v1.yaml
  sweep experiments/table1_momentum.yaml --settings m=0.99 m=0.9 m=0.5 m=1.0
  sweep experiments/table1_momentum.yaml --settings m=0.8 m=0.7 m=0.6 m=0.999
  sweep experiments/table1_momentum.yaml --settings m=0 m=0.3
fi
if [ "$STREAM" != a ]; then
  sweep experiments/table7_simclr.yaml
  sweep experiments/supp_e_byol.yaml
  sweep experiments/table7_simsiam.yaml
  sweep experiments/table7_swav.yaml
  sweep experiments/table6_start_epoch.yaml
  sweep experiments/table5_queue.yaml
  sweep experiments/supp_g_negatives.yaml
  sweep experiments/table2_alpha_ex.yaml
  sweep experiments/table4_alpha_in.yaml
  sweep experiments/table3_interp_vs_extrap.yaml
  sweep experiments/supp_f_renorm.yaml
fi
