"""Sphinx extension: drop repeated inline <script> bodies from each page.

Jupyter Book 1.0.4 with sphinx-thebe registers the thebe configuration script twice (once with the file
name ``None``, once with ``''``), and the second ``const THEBE_JS_URL`` throws "Identifier has already
been declared" in every page's console.
"""


def _dedupe(app, pagename, templatename, context, doctree):
    seen, kept = set(), []
    for script in context.get("script_files", []):
        body = getattr(script, "attributes", {}).get("body")
        if body:
            if body in seen:
                continue
            seen.add(body)
        kept.append(script)
    context["script_files"] = kept


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
