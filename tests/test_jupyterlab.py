"""The book in a live kernel: JupyterLab, headless, driven by Chromium (Playwright on Debian's chromium, as
``tests/test_book_build.py`` does).

JupyterLab is one of the named ways to read the book, and the ipywidgets explorers (:func:`ftcl_core.pages.explorers.
live_widget`) only run there: the static build leaves them out.  Each test opens a chapter in a
JupyterLab started on a free port with a token, runs every cell, waits for the chapter's widget, moves one of its
sliders with the keyboard, and checks that the figure the widget draws changes.  The server serves a temporary
folder holding copies of the notebooks, so nothing is written into the repository's notebooks, and its runs
root (``FTCL_RUNS_ROOT``) is temporary too.  Skipped, with a message, where Chromium is absent (``.ci/run``
installs it) or JupyterLab is not installed (the ``test`` extras carry it).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # a JupyterLab server, and its chapters run in Chromium
START_S = 90  # JupyterLab's start on two busy cores takes 5-20 s: generous, as is every wait below
RUN_S = 90  # a chapter's cells under the smoke profile, or chapter 8 reading the committed runs: 10-30 s


@dataclass
class Lab:
    """A running JupyterLab: its address, token and the folder it serves."""

    url: str
    token: str
    root: Path


def free_port() -> int:
    """A TCP port nothing listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_notebook(name: str, dest: Path, parameters: str | None = None) -> None:
    """``book/<name>.ipynb`` into ``dest``, its parameters cell replaced by ``parameters`` when given."""
    nb = json.loads((ROOT / "book" / f"{name}.ipynb").read_text())
    if parameters is not None:
        cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
        cell["source"] = parameters
    (dest / f"{name}.ipynb").write_text(json.dumps(nb))


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[Lab]:
    """JupyterLab serving a temporary folder with the FT chapter (learn5_ft, smoke profile) and chapter 8 (the cpu profile's
    committed runs, read through a link: chapter 8 only reads them; under the smoke profile it would train two
    runs first, a minute here); shut down, kernels included, at the end of the module."""
    pytest.importorskip("jupyterlab", reason="JupyterLab not installed (pip install jupyterlab, in the test extras)")
    tmp = tmp_path_factory.mktemp("jupyterlab")
    served = tmp / "notebooks"
    served.mkdir()
    copy_notebook("learn5_ft", served)
    copy_notebook("08_run_explorer", served, parameters='profile = "cpu"')
    runs = tmp / "runs"
    runs.mkdir()
    (runs / "cpu").symlink_to(ROOT / "results" / "cpu", target_is_directory=True)
    settings = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)  # no toast (the news question) over the page; no request for news or updates
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"doNotDisturbMode": True, "fetchNews": "false", "checkForUpdates": False}))
    notebook_settings = tmp / "settings" / "@jupyterlab" / "notebook-extension"
    notebook_settings.mkdir(parents=True)  # every cell in the page (JupyterLab 4 renders only those in view)
    (notebook_settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    token, port = secrets.token_hex(16), free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("FTCL_BOOK_BUILD", "MPLBACKEND")}  # a reader's kernel
    env.update(FTCL_PROFILE="smoke", FTCL_RUNS_ROOT=str(runs), JUPYTER_CONFIG_DIR=str(tmp / "config"),
               JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"), IPYTHONDIR=str(tmp / "ipython"))
    log = (tmp / "jupyterlab.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", "--allow-root", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={served}",
         "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=served, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start:\n{(tmp / 'jupyterlab.log').read_text()[-3000:]}")
                time.sleep(0.5)
        yield Lab(url, token, served)
    finally:
        try:  # the server's own shutdown stops its kernels too
            urllib.request.urlopen(urllib.request.Request(f"{url}/api/shutdown?token={token}", method="POST"), timeout=10)
            proc.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()


# JupyterLab's notebook panel of one file, through the app it exposes (--LabApp.expose_app_in_browser); by its
# path, not as the current widget, which a restored workspace or a dialog could make another one.
PANEL_JS = """const panel = path => [...window.jupyterapp.shell.widgets('main')]
  .find(w => w.context && w.context.path === path && w.sessionContext);"""
OPEN_JS = f"path => {{ {PANEL_JS} const w = window.jupyterapp && panel(path); return w ? w.id : null; }}"
KERNEL_IDLE_JS = f"""path => {{ {PANEL_JS} const s = panel(path).sessionContext.session;
  return !!(s && s.kernel) && s.kernel.status === 'idle'; }}"""
RUN_ALL_JS = f"path => {{ {PANEL_JS} window.jupyterapp.shell.activateById(panel(path).id); " \
             "return window.jupyterapp.commands.execute('notebook:run-all-cells'); }"
# 'done' once every code cell shows an execution count and the kernel is idle again, an error's text as soon as
# a cell shows one (Run All stops there), else null.
ALL_RAN_JS = f"""path => {{ {PANEL_JS} const w = panel(path);
  const cells = w.content.widgets.filter(c => c.model.type === 'code');
  for (const c of cells) {{
    const err = c.model.outputs.toJSON().find(o => o.output_type === 'error');
    if (err) {{ return err.ename + ': ' + err.evalue; }}
  }}
  const ran = cells.every(c => c.model.executionCount !== null);
  return ran && w.sessionContext.session.kernel.status === 'idle' ? 'done' : null; }}"""


def run_chapter(browser, lab: Lab, name: str):
    """Open ``name`` in JupyterLab (a fresh workspace: nothing else restored), run all its cells, and return the
    page and the notebook's panel once they all ran without an error."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(RUN_S * 1000)
    path = f"{name}.ipynb"
    page.goto(f"{lab.url}/lab/workspaces/{name}/tree/{path}?reset&token={lab.token}", wait_until="domcontentloaded")
    panel_id = page.wait_for_function(OPEN_JS, arg=path, timeout=START_S * 1000).json_value()
    page.wait_for_function(KERNEL_IDLE_JS, arg=path, timeout=START_S * 1000)
    page.evaluate(RUN_ALL_JS, path)
    outcome = page.wait_for_function(ALL_RAN_JS, arg=path, timeout=RUN_S * 1000, polling=500).json_value()
    assert outcome == "done", f"{name}: a cell failed in JupyterLab: {outcome}"
    return page, page.locator(f"[id='{panel_id}']")


def output_image(widget) -> str:
    """The ``src`` of the first figure the widget's output area shows ('' while there is none)."""
    img = widget.locator(".jp-OutputArea-output img")
    return img.first.get_attribute("src") if img.count() else ""


def move_slider(page, widget, index: int) -> None:
    """Focus the ``index``-th slider of ``widget`` and press the right arrow key: one step up, as a reader would."""
    handle = widget.locator(".widget-slider .noUi-handle").nth(index)
    handle.scroll_into_view_if_needed()
    handle.focus()
    page.keyboard.press("ArrowRight")


def image_changes(page, widget, before: str) -> bool:
    """Whether the widget's figure differs from ``before`` within RUN_S seconds."""
    deadline = time.monotonic() + RUN_S
    while time.monotonic() < deadline:
        now = output_image(widget)
        if now and now != before:
            return True
        page.wait_for_timeout(250)
    return False


def test_score_bound_widget_responds_in_jupyterlab(browser, lab):
    page, notebook = run_chapter(browser, lab, "learn5_ft")
    widget = notebook.locator(".widget-interact").first
    widget.wait_for(state="visible")
    readout = widget.locator(".widget-readout").first
    page.wait_for_function("w => w.querySelector('.jp-OutputArea-output img')", arg=widget.element_handle())
    before, value = output_image(widget), readout.text_content()
    move_slider(page, widget, 0)  # alpha, the Beta distribution's parameter: 2.0 -> 2.1
    assert image_changes(page, widget, before), "the figure did not change after the alpha slider moved"
    assert readout.text_content() != value, (value, readout.text_content())
    page.close()


def test_run_explorer_widget_responds_in_jupyterlab(browser, lab):
    page, notebook = run_chapter(browser, lab, "08_run_explorer")
    widget = notebook.locator(".widget-vbox:has(.widget-select-multiple)").first
    widget.wait_for(state="visible")
    page.wait_for_function("w => w.querySelectorAll('.jp-OutputArea-output img').length >= 2",
                           arg=widget.element_handle())
    before = output_image(widget)  # the score statistics, drawn with the slider's moving average
    move_slider(page, widget, 0)  # the smoothing window: 10 -> 11 steps
    assert image_changes(page, widget, before), "the statistics did not change after the smoothing slider moved"
    page.close()


def test_a_chapters_numbers_show_in_jupyterlab(browser, lab):
    """Issue 65: in JupyterLab a paragraph that quotes numbers shows them (printed by its cell), never a raw role
    or a placeholder."""
    import re

    page, notebook = run_chapter(browser, lab, "learn5_ft")
    text = "\n".join(notebook.locator(".jp-RenderedMarkdown, .jp-OutputArea-output").all_inner_texts())  # not the code
    assert not [raw for raw in ("{glue", "{term}", "{{", "{eval}") if raw in text], "a raw role or placeholder shows"
    quoted = re.search(r"Every one of the ([\d\u00a0 ]+) measured scores", text)
    assert quoted and re.search(r"\d", quoted.group(1)), "the checked scores' count does not show"
    page.close()
