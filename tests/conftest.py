"""Shared fixtures.  The book's chapters are executed once per test session (smoke profile, under papermill, as
the static build runs them); the papermill test and the book build test both use that one execution."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHAPTERS = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))  # Learn chapters and numbered ones


class SmokeBook:
    """A copy of the book's sources whose chapters were executed under papermill; ``errors`` per chapter."""

    def __init__(self, root: Path, errors: dict[str, BaseException | None]) -> None:
        self.root, self.errors = root, errors


@pytest.fixture(scope="session")
def smoke_book(tmp_path_factory) -> SmokeBook:
    import nbformat
    import papermill as pm

    root = tmp_path_factory.mktemp("smoke_book")
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, root / name)
    shutil.copytree(ROOT / "book", root / "book", ignore=shutil.ignore_patterns("*.ipynb", "src", "__pycache__"))
    env = {"FTCL_RUNS_ROOT": str(root / "runs"), "FTCL_BOOK_BUILD": "1", "FTCL_PROFILE": "smoke"}
    saved = {k: os.environ.get(k) for k in [*env, "MPLBACKEND"]}
    os.environ.update(env)
    os.environ.pop("MPLBACKEND", None)  # the kernel's inline backend draws the figures
    errors: dict[str, BaseException | None] = {}
    try:
        for chapter in CHAPTERS:
            out = root / "book" / f"{chapter}.ipynb"
            try:
                # a smoke cell takes seconds: one that waits 15 minutes is a hung kernel, reported as such
                pm.execute_notebook(str(ROOT / "book" / f"{chapter}.ipynb"), str(out), parameters={"profile": "smoke"},
                                    cwd=str(ROOT / "book"), kernel_name="python3", progress_bar=False,
                                    execution_timeout=900)  # a guard against hangs, not a speed test: a busy CPU may be slow
                errors[chapter] = None
            except Exception as err:  # reported by the chapter's own test
                errors[chapter] = err
            if out.is_file():  # papermill's injected parameters cell is not part of the book
                nb = nbformat.read(out, as_version=4)
                nb.cells = [c for c in nb.cells if "injected-parameters" not in c.get("metadata", {}).get("tags", [])]
                nbformat.write(nb, out)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return SmokeBook(root, errors)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (Debian's, through playwright) for the browser tests of the built book and of JupyterLab;
    skipped, with the fix, where it is missing."""
    if CHROMIUM is None:
        pytest.skip("Chromium not found: install Debian's chromium (apt-get install chromium) to run the browser tests")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()
