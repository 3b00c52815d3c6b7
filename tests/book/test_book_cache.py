"""The book's execution cache (_ext/book_cache.py): cleared exactly when the package, data/ or REPRO_*
change; the paper-to-book map is always re-executed; a chapter's own edits are jupyter-cache's business."""

import importlib.util
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("book_cache", ROOT / "_ext" / "book_cache.py")
book_cache = importlib.util.module_from_spec(spec)
spec.loader.exec_module(book_cache)


@pytest.fixture
def project(tmp_path):
    """A minimal project tree: lib/, data/, requirements.txt, pyproject.toml."""
    (tmp_path / "lib" / "pkg").mkdir(parents=True)
    (tmp_path / "lib" / "pkg" / "core.py").write_text("x = 1\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "result.json").write_text("{}")
    (tmp_path / "requirements.txt").write_text("numpy\n")
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    return tmp_path


def _fill_cache(build, names):
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    jc = get_cache(str(book_cache.cache_dir(build)))
    for i, name in enumerate(names):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"print({i})", execution_count=1)])
        nb.cells[0].outputs = [nbformat.v4.new_output("stream", text=f"{i}\n")]
        jc.cache_notebook_bundle(CacheBundleIn(nb, uri=str(build.parent / "book" / name)), check_validity=False)
    return jc


def test_state_follows_the_package_data_and_environment(project):
    env = {"REPRO_SCALE": "quick"}
    s0 = book_cache.state(project, env)
    assert book_cache.state(project, env) == s0
    (project / "lib" / "pkg" / "core.py").write_text("x = 2\n")
    s1 = book_cache.state(project, env)
    assert s1 != s0
    (project / "data" / "result.json").write_text('{"a": 1}')
    s2 = book_cache.state(project, env)
    assert s2 != s1
    assert book_cache.state(project, {"REPRO_SCALE": "paper"}) != s2
    assert book_cache.state(project, dict(env, REPRO_FIGURES="/tmp/figs")) != s2
    (project / "lib" / "pkg" / "__pycache__").mkdir()
    (project / "lib" / "pkg" / "__pycache__" / "core.cpython-311.py").write_text("junk")
    assert book_cache.state(project, env) == s2  # bytecode caches do not count


def test_cache_kept_when_nothing_changed_cleared_when_lib_changes(project, tmp_path):
    build = tmp_path / "out"
    env = {"REPRO_SCALE": "quick"}
    first = book_cache.prepare(build, project, env)
    assert first == {"cleared": False, "reason": "first build", "dropped": [], "damaged": None}
    jc = _fill_cache(build, ["theory.md", "hmc.md", "figure_map.md"])
    assert len(jc.list_cache_records()) == 3
    again = book_cache.prepare(build, project, env)  # nothing changed: chapters stay cached, the map re-runs
    assert again["reason"] == "unchanged" and not again["cleared"] and again["dropped"] == ["figure_map.md"]
    from jupyter_cache import get_cache

    names = sorted(Path(r.uri).name for r in get_cache(str(book_cache.cache_dir(build))).list_cache_records())
    assert names == ["hmc.md", "theory.md"]
    (project / "lib" / "pkg" / "core.py").write_text("x = 3\n")
    changed = book_cache.prepare(build, project, env)
    assert changed["cleared"] and changed["reason"] == "inputs changed"
    assert not book_cache.cache_dir(build).exists()


def test_the_book_is_configured_for_the_cache():
    cfg = (ROOT / "_config.yml").read_text()
    assert "execute_notebooks: cache" in cfg
    assert "_ext/book_cache.py $(BUILD_ROOT)" in (ROOT / "Makefile").read_text()


def _cache_a_file(build):
    c = book_cache.cache_dir(build)
    c.parent.mkdir(parents=True, exist_ok=True)
    c.write_text("not a folder")


def _binary_state(build):
    _fill_cache(build, ["theory.md"])
    (build / "_build" / ".book_cache_state").write_bytes(b"\x89\xff\x00binary")


def _garbage_db(build):
    _fill_cache(build, ["theory.md"])
    for db in book_cache.cache_dir(build).glob("*.db"):
        db.write_bytes(b"garbage " * 100)


def _empty_db(build):
    _fill_cache(build, ["theory.md"])
    for db in book_cache.cache_dir(build).glob("*.db"):
        db.write_bytes(b"")


@pytest.mark.parametrize("damage", [_cache_a_file, _binary_state, _garbage_db, _empty_db])
def test_a_damaged_cache_is_cleared_with_a_note(project, tmp_path, damage):
    """Issue 24, group 7: each damage clears the cache with a one-line note, and the next build starts clean."""
    build = tmp_path / "out"
    env = {"REPRO_SCALE": "quick"}
    book_cache.prepare(build, project, env)
    damage(build)
    done = book_cache.prepare(build, project, env)
    assert done["damaged"] and done["cleared"] or not book_cache.cache_dir(build).exists()
    assert not book_cache.cache_dir(build).exists()
    assert done["damaged"] and ("damaged" in done["damaged"] or "unreadable" in done["damaged"])
    again = book_cache.prepare(build, project, env)
    assert again["damaged"] is None and not again["cleared"]
    _fill_cache(build, ["theory.md"])  # a fresh cache works
    assert book_cache.prepare(build, project, env)["reason"] == "unchanged"


def test_a_paper_scale_build_without_results_stops_at_once_naming_the_route(tmp_path):
    """`make book REPRO_SCALE=paper` renders results computed by `reproduce`; without REPRO_RESULTS it stops
    before anything runs, and says which two commands to use."""
    import os
    import subprocess
    import sys
    import time

    assert book_cache.paper_route({"REPRO_SCALE": "quick"}) is None
    assert book_cache.paper_route({"REPRO_SCALE": "paper", "REPRO_RESULTS": "/x"}) is None
    message = book_cache.paper_route({"REPRO_SCALE": " Paper "})
    assert "reproduce --scale paper --out results/paper" in message
    assert "REPRO_RESULTS=$PWD/results/paper make book REPRO_SCALE=paper" in message
    env = {k: v for k, v in os.environ.items() if k != "REPRO_RESULTS"} | {"REPRO_SCALE": "paper"}
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, str(ROOT / "_ext" / "book_cache.py"), str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert out.returncode == 2 and "reproduce --scale paper" in out.stderr
    assert time.monotonic() - t0 < 30 and not (tmp_path / "_build").exists()  # at once, nothing touched
    # the Makefile runs this check first, for the HTML and the PDF builds alike
    make = (ROOT / "Makefile").read_text()
    for target in ("book:", "pdf:"):
        body = make[make.index(f"\n{target}") :].split("\n\n")[0]
        assert body.index("_ext/book_cache.py") < body.index("jupyter-book build"), target
