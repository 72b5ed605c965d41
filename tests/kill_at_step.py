"""``python tests/kill_at_step.py STEP ARGS...``: ``python -m ftcl_core ARGS...`` killed by signal 9 before training
step STEP (a crash, for the resume tests; under torchrun every rank dies there). Installed as a step callback, so
the training loop holds no test hook."""

import os
import sys

from ftcl_core.__main__ import main
from ftcl_core.training import step_callback

step = int(sys.argv[1])


def kill(current: int) -> None:
    if current == step:
        os.kill(os.getpid(), 9)


with step_callback(kill):
    sys.exit(main(sys.argv[2:]))
