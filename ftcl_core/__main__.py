"""``python -m ftcl_core``: the entry point of the command line (:mod:`ftcl_core.study.cli`, which documents it).

It sits above the three layers (the library, :mod:`ftcl_core.study`, :mod:`ftcl_core.pages`); ``tests/test_layers.py``
exempts it from the layers' import rules.
"""

from __future__ import annotations

import sys

from ftcl_core.study.cli import EXIT_DIVERGED, EXIT_ERROR, main  # noqa: F401  (the exit statuses, for callers of main)

if __name__ == "__main__":
    sys.exit(main())
