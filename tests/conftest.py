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


WORKERS = 2  # chapters executed at once, each kernel on one thread: the machines have two cores


def _execute(chapter: str, out: Path, runs: Path) -> BaseException | None:
    """One chapter under papermill's command line, as a user runs it (``-p profile smoke``), in a process of its own
    whose kernel trains on one thread into ``runs`` (a store of this worker's own: two chapters that train the same
    smoke run never share its folder). The error, or None."""
    import subprocess
    import sys

    env = {**os.environ, "FTCL_RUNS_ROOT": str(runs), "FTCL_BOOK_BUILD": "1", "FTCL_PROFILE": "smoke",
           "OMP_NUM_THREADS": "1"}
    env.pop("MPLBACKEND", None)  # the kernel's inline backend draws the figures
    # a smoke cell takes seconds: one that waits 15 minutes is a hung kernel, reported as such (a guard against
    # hangs, not a speed test: a busy CPU may be slow)
    cmd = [sys.executable, "-m", "papermill", str(ROOT / "book" / f"{chapter}.ipynb"), str(out), "-p", "profile",
           "smoke", "--cwd", str(ROOT / "book"), "-k", "python3", "--no-progress-bar", "--execution-timeout", "900"]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return None if res.returncode == 0 else RuntimeError(f"papermill exited {res.returncode}:\n{res.stderr[-4000:]}")


@pytest.fixture(scope="session")
def smoke_book(tmp_path_factory) -> SmokeBook:
    from concurrent.futures import ThreadPoolExecutor

    import nbformat

    root = tmp_path_factory.mktemp("smoke_book")
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, root / name)
    shutil.copytree(ROOT / "book", root / "book", ignore=shutil.ignore_patterns("*.ipynb", "src", "__pycache__"))
    free = [root / f"runs{i}" for i in range(WORKERS)]  # each worker's store, handed to one chapter at a time

    def run(chapter: str) -> BaseException | None:
        runs = free.pop()
        try:
            return _execute(chapter, root / "book" / f"{chapter}.ipynb", runs)
        finally:
            free.append(runs)

    with ThreadPoolExecutor(WORKERS) as pool:
        errors = dict(zip(CHAPTERS, pool.map(run, CHAPTERS)))
    for chapter in CHAPTERS:
        out = root / "book" / f"{chapter}.ipynb"
        if out.is_file():  # papermill's injected parameters cell is not part of the book
            nb = nbformat.read(out, as_version=4)
            nb.cells = [c for c in nb.cells if "injected-parameters" not in c.get("metadata", {}).get("tags", [])]
            nbformat.write(nb, out)
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
