"""Sphinx extension: no launch or repository button that points at a placeholder repository.

``_config.yml``'s ``repository.url`` names where the book is published; the launch buttons (Colab, Binder) and the
repository button are built from it.  Until it names a real repository, those buttons would send a reader to a page
that does not exist, so they are hidden and the build says so in one line (``make book`` keeps working offline).
``FTCL_REPOSITORY_URL`` (and ``FTCL_REPOSITORY_BRANCH``) name the repository at build time instead of the file; the
chapters' Colab set-up cell reads ``_config.yml`` (``tools/notebooks.py``), so publishing sets it there.
"""

from __future__ import annotations

import os

from sphinx.util import logging

PLACEHOLDERS = {"", "https://github.com/ftcl/ftcl", "https://github.com/executablebooks/jupyter-book"}
BUTTONS = ("use_repository_button", "use_issues_button", "use_edit_page_button", "use_source_button")


def guard(options: dict, environ: dict) -> str | None:
    """Edit the theme ``options`` in place: the repository from ``environ`` if it names one; without a real repository,
    no launch or repository button.  Returns the line the build prints when it hides them, else ``None``."""
    if environ.get("FTCL_REPOSITORY_URL"):
        options["repository_url"] = environ["FTCL_REPOSITORY_URL"].rstrip("/")
        if environ.get("FTCL_REPOSITORY_BRANCH"):
            options["repository_branch"] = environ["FTCL_REPOSITORY_BRANCH"]
    url = str(options.get("repository_url") or "").rstrip("/")
    if url not in PLACEHOLDERS:
        return None
    options["launch_buttons"] = {}
    for key in BUTTONS:
        options[key] = False
    return (f"launch and repository buttons hidden: repository.url in _config.yml is a placeholder ({url or 'empty'}); "
            "set it (or FTCL_REPOSITORY_URL) to the repository the book is published from to show them")


def _config_inited(app, config) -> None:
    options = dict(config.html_theme_options or {})
    said = guard(options, dict(os.environ))
    config.html_theme_options = options
    if said:
        logging.getLogger(__name__).info(said)


def setup(app):
    app.connect("config-inited", _config_inited, priority=100)  # before the theme reads its options
    return {"parallel_read_safe": True, "parallel_write_safe": True}
