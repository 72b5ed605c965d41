"""``python tests/kill_at_step.py STEP[:SIGNAL] ARGS...``: ``python -m ftcl_core ARGS...`` killed by a signal (9 unless
named, e.g. ``13:SIGINT``) before training step STEP: a crash (9), Ctrl-C (SIGINT) or a shutdown (SIGTERM), for the
resume tests (under torchrun every rank gets it there).  Installed as a step callback, so the training loop holds no
test hook.

Deterministic, whatever launched the tests: the signal is raised in the main thread by ``signal.raise_signal``, whose
handler has run before the call returns (no delivery to another thread, no wait for the interpreter to notice), and
SIGINT gets Python's own handler back first, as an interactive Ctrl-C finds it: a shell that starts a command in the
background (``cmd &`` without job control, as CI scripts and ``nohup`` do) hands it SIGINT ignored, and Python keeps
it so, which once made this helper's Ctrl-C a silent no-op (the run finished, exit 0).  A signal that still does not
stop the run, or a run that never reaches STEP, exits with status 99 and says so: no test passes without the signal.
"""

import signal
import sys

from ftcl_core.__main__ import main
from ftcl_core.training import step_callback

NOT_STOPPED = 99
signalled = False

at, _, name = sys.argv[1].partition(":")
step, sig = int(at), signal.Signals[name] if name else signal.SIGKILL
if sig == signal.SIGINT:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def kill(current: int) -> None:
    global signalled
    if current == step:
        signalled = True
        signal.raise_signal(sig)  # its Python handler raises here, before this returns
        print(f"kill_at_step: {sig.name} raised before step {step} did not stop the run (handler "
              f"{signal.getsignal(sig)!r})", file=sys.stderr)
        sys.exit(NOT_STOPPED)


with step_callback(kill):
    status = main(sys.argv[2:])
if signalled:  # stopped by the signal: main's exit status (130, 143)
    sys.exit(status)
print(f"kill_at_step: the run ended (status {status}) without reaching step {step}; nothing was signalled",
      file=sys.stderr)
sys.exit(NOT_STOPPED)
