#!/usr/bin/env bash
# Train the cpu profile's reference runs (issue #4) in priority order; every sweep skips finished runs,
# so running this again after an interruption resumes where it stopped.  One process at a time: two
# concurrent trainings on a 2-core machine are ~8x slower each.  THREADS=1 leaves a core free.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export OMP_NUM_THREADS=${THREADS:-2}
sweep() { "$PY" -m ftcl_core sweep "$@" --profile cpu || echo "sweep failed: $*" >&2; }
sweep experiments/table5_ft_v1.yaml --seeds 1 2
sweep experiments/table1_momentum.yaml --seeds 0 1 2 --settings m=0.99 m=0.9 m=0.5 m=1.0
sweep experiments/table1_momentum.yaml --seeds 0 1 2 --settings m=0.8 m=0.7 m=0.6 m=0.999
sweep experiments/table7_start_epoch.yaml
sweep experiments/table2_alpha_ex.yaml
sweep experiments/table3_alpha_in.yaml
sweep experiments/table4_interp_vs_extrap.yaml
sweep experiments/table6_queue.yaml
sweep experiments/supp_g_negatives.yaml
sweep experiments/supp_f_renorm.yaml
sweep experiments/table1_momentum.yaml --seeds 0 1 2 --settings m=0 m=0.3
