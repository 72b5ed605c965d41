"""The book builds with no warnings (smoke profile) and works in a real browser (headless Chromium).

The build runs ``jupyter-book build --warningiserror`` on the chapters the session executed once under
papermill (``tests/conftest.py``; an execution error fails the build test too).  The browser part opens
every page, checks that it loads without console errors from the book itself, that every figure is
present, and that the static explorers respond to a slider or menu with no kernel.  It is skipped, with a
message, where Chromium is absent (``.ci/run`` installs it).
"""

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def html(request):
    """The book built with --warningiserror from the chapters the session executed once (tests/conftest.py)."""
    if os.environ.get("FTCL_TEST_BOOK_HTML"):  # check another build (make book's _build/html, say) instead
        return Path(os.environ["FTCL_TEST_BOOK_HTML"])
    smoke_book = request.getfixturevalue("smoke_book")
    failed = [c for c, e in smoke_book.errors.items() if e is not None]
    if failed:
        pytest.fail(f"chapters {failed} did not execute; see test_chapter_runs_under_papermill_smoke")
    out = smoke_book.root
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "off"  # executed already, under papermill
    (out / "_config.yml").write_text(yaml.safe_dump(config))
    jb = Path(sys.executable).parent / "jupyter-book"
    res = subprocess.run([str(jb), "build", str(out), "--warningiserror", "--keep-going"], capture_output=True,
                         text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    return out / "_build" / "html"


def test_book_builds_every_chapter(html):
    pages = sorted(p.name for p in (html / "book").glob("[0-9][0-9]_*.html"))
    chapters = re.findall(r"file: book/(\d\d_\w+)", (ROOT / "_toc.yml").read_text())
    assert pages == [f"{c}.html" for c in chapters]
    for p in pages:
        text = (html / "book" / p).read_text()
        assert "Traceback" not in text, f"{p} shows a traceback"
        assert 'class="cell_output' in text, f"{p} has no cell outputs"


@pytest.fixture(scope="module")
def server(html):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep the test output readable
            pass

    handler = functools.partial(Quiet, directory=str(html))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("Chromium not found: install Debian's chromium (apt-get install chromium) to run the browser test")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


def open_page(browser, url):
    """Load ``url``; return the page and the console errors that come from the book itself.

    This machine has no internet: failures to fetch resources from other hosts (MathJax's CDN, say) are
    the sandbox, not the book, and are not counted; anything failing on the book's own host is.
    """
    page = browser.new_page()
    errors, failed_local = [], []
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("requestfailed", lambda r: failed_local.append(r.url) if r.url.startswith("http://127.0.0.1") else None)
    page.goto(url, wait_until="load")
    page.wait_for_timeout(500)
    own = [e for e in errors if "Failed to load resource" not in e and "net::ERR" not in e]
    return page, own + [f"failed local request: {u}" for u in failed_local]


def test_every_page_loads_clean_with_its_figures(browser, server, html):
    pages = ["index.html"] + [f"book/{p.name}" for p in sorted((html / "book").glob("*.html"))]
    min_figures = {"01_introduction": 1, "02_scores": 3, "03_score_bound": 1, "04_training": 3, "05_momentum": 4,
                   "06_feature_transformations": 4}
    problems = []
    for rel in pages:
        page, errors = open_page(browser, f"{server}/{rel}")
        assert not errors, f"{rel}: {errors}"
        broken = page.evaluate(
            "[...document.querySelectorAll('main img')].filter(i => !(i.complete && i.naturalWidth > 0)).length")
        assert broken == 0, f"{rel}: {broken} figure(s) failed to load"
        n_img = page.evaluate("document.querySelectorAll('main img').length")
        stem = Path(rel).stem
        assert n_img >= min_figures.get(stem, 0), f"{rel}: {n_img} figures, expected >= {min_figures.get(stem)}"
        for defect in page_defects(page):
            problems.append(f"{rel}: {defect}")
        page.close()
    assert not problems, "\n".join(problems)


# Each kind of rendering defect a reader met once, looked for on every page.
DEFECTS_JS = r"""async () => {
  const out = [];
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const main = document.querySelector('main') || document.body;
  // 1. a Markdown table that reached the page as text
  for (const el of main.querySelectorAll('p, li, .output_markdown, .cell_output div')) {
    if (el.querySelector('table, pre')) continue;
    if (/\|\s*:?-{3,}:?\s*\|/.test(el.textContent)) { out.push('Markdown table as text: ' + el.textContent.slice(0, 80)); }
  }
  // 2. TeX left untypeset (no MathJax, or a broken block): delimiters (a lone $ too) visible outside code
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement.closest('pre, code, script, style, mjx-container, .MathJax')) continue;
    const t = n.textContent;
    if (/\\[()\[\]]|\$|\\(frac|tilde|mathcal|sum|lambda)\b/.test(t)) { out.push('untypeset math: ' + t.trim().slice(0, 80)); }
  }
  // 3. printed text wider than its column (the right part hidden behind a scroll bar)
  for (const pre of main.querySelectorAll('.cell_output pre')) {
    if (pre.scrollWidth > pre.clientWidth + 2) {
      out.push('text output wider than its column: ' + pre.textContent.split('\n')[0].slice(0, 80));
    }
  }
  // 4. interactive figures whose axes have no title
  for (const fig of main.querySelectorAll('.js-plotly-plot')) {
    const layout = fig.layout || {};
    for (const key of Object.keys(layout).filter(k => /^[xy]axis\d*$/.test(k))) {
      const ax = layout[key];
      if (ax.visible === false || ax.showticklabels === false) continue;
      const title = ax.title && (ax.title.text !== undefined ? ax.title.text : ax.title);
      if (!title) { out.push('plotly axis without a title: ' + key); }
    }
  }
  return out;
}"""


def page_defects(page) -> list[str]:
    return page.evaluate(DEFECTS_JS)


def test_the_defect_finder_finds_each_kind_it_looks_for(browser):
    page = browser.new_page()
    page.set_content("""<main>
      <p>| setting | ours |\n|---|---|\n| K | 78.3 |</p>
      <p>The score \\(S = z_q\\cdot z_k\\) stays raw without MathJax.</p>
      <ul><li>the loss is: $ <span class="math">L</span> $</li></ul>
      <div class="cell_output"><pre style="width: 120px; overflow: auto">setting   ours   seeds   paper   verdict</pre></div>
      <div class="js-plotly-plot" id="fig"></div>
    </main>
    <script>document.getElementById('fig').layout = {xaxis: {title: {text: 'step'}}, yaxis: {}};</script>""")
    found = page_defects(page)
    page.close()
    kinds = ("Markdown table as text", "untypeset math", "text output wider than its column", "plotly axis without a title")
    for kind in kinds:
        assert any(f.startswith(kind) for f in found), f"{kind} not found in {found}"
    assert any(f.startswith("untypeset math") and "$" in f for f in found), found  # a lone $ around typeset math
    assert not any("xaxis" in f for f in found), found  # the titled x axis is not reported


def visible_traces(page, index):
    return page.evaluate(f"document.querySelectorAll('.js-plotly-plot')[{index}].data.map(t => t.visible)")


def test_score_bound_explorer_responds_without_a_kernel(browser, server):
    page, errors = open_page(browser, f"{server}/book/03_score_bound.html")
    assert not errors
    assert page.evaluate("document.querySelectorAll('.js-plotly-plot').length") >= 2
    for index in (0, 1):
        before = visible_traces(page, index)
        rail = page.locator(".js-plotly-plot").nth(index).locator(".slider-rail-touch-rect").first
        rail.scroll_into_view_if_needed()
        box = rail.bounding_box()
        page.mouse.click(box["x"] + 3, box["y"] + box["height"] / 2)  # drag the slider to its first step
        page.wait_for_timeout(300)
        assert visible_traces(page, index) != before, f"explorer {index} did not respond to the slider"
    page.close()


def click_center(page, locator):
    """Click an SVG element at its centre (plotly's menus are SVG groups that Playwright cannot click)."""
    box = locator.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def test_run_explorer_menu_responds_without_a_kernel(browser, server):
    page, errors = open_page(browser, f"{server}/book/08_run_explorer.html")
    assert not errors
    before = visible_traces(page, 0)
    page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    click_center(page, page.locator(".js-plotly-plot .updatemenu-header-group").first)
    page.wait_for_timeout(300)
    click_center(page, page.locator(".js-plotly-plot .updatemenu-dropdown-button").nth(1))
    page.wait_for_timeout(300)
    assert visible_traces(page, 0) != before
    page.close()
