"""Sphinx extension: read (and so execute) the pages named in ``read_last`` after all others.

Sphinx reads documents in alphabetical order; the paper-to-book map tabulates the claims that the
experiment chapters record when they execute, so it must execute after them.
"""


def _reorder(app, env, docnames):
    last = [d for d in app.config.read_last if d in docnames]
    docnames[:] = [d for d in docnames if d not in last] + last


def setup(app):
    app.add_config_value("read_last", [], "env")
    app.connect("env-before-read-docs", _reorder)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
