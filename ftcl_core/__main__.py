"""``python -m ftcl_core``: the entry point of the command line (:mod:`ftcl_core.study.cli`, which documents it).

It sits above the three layers (the library, :mod:`ftcl_core.study`, :mod:`ftcl_core.pages`), the only module of the
package's top level that may import the study and the pages (``tests/test_layers.py`` exempts it): ``summary`` redraws
the figure its findings show with the pages' :func:`ftcl_core.pages.findings.write_figure`.
"""

from __future__ import annotations

import sys

from ftcl_core.study import cli
from ftcl_core.study.cli import EXIT_DIVERGED, EXIT_ERROR  # noqa: F401  (the exit statuses, for callers of main)


def main(argv: list[str] | None = None) -> int:
    """The command line (:func:`ftcl_core.study.cli.main`), with the pages' figures."""
    return cli.main(argv, figures=_figures)


def _figures(evidence) -> list:
    from ftcl_core.pages.findings import write_figure  # matplotlib, only for ``summary``

    return [write_figure(evidence)]


if __name__ == "__main__":
    sys.exit(main())
