"""``python tests/kill_at_step.py STEP[:SIGNAL] ARGS...``: ``python -m ftcl_core ARGS...`` killed by a signal (9 unless
named, e.g. ``13:SIGINT``) before training step STEP: a crash (9), Ctrl-C (SIGINT) or a shutdown (SIGTERM), for the
resume tests (under torchrun every rank gets it there).  Installed as a step callback, so the training loop holds no
test hook."""

import os
import signal
import sys

from ftcl_core.__main__ import main
from ftcl_core.training import step_callback

at, _, name = sys.argv[1].partition(":")
step, sig = int(at), signal.Signals[name] if name else signal.SIGKILL


def kill(current: int) -> None:
    if current == step:
        os.kill(os.getpid(), sig)


with step_callback(kill):
    sys.exit(main(sys.argv[2:]))
