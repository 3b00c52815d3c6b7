"""`make lab`: JupyterLab opens a chapter's MyST .md as a notebook and runs it with the venv's kernel.

The lab's environment is in one place, .binder/lab-env.sh (sourced by `make lab` and by Binder's start):
it points JUPYTER_CONFIG_PATH at .binder/jupyter, whose labconfig/default_setting_overrides.json makes
jupytext's "Jupytext Notebook" the default viewer of .md files.  The browser test starts the server through
`make lab` itself (on 127.0.0.1, a free port, a random token) and drives the system Chromium with Playwright.
"""

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import jupytext
import pytest

import attention_paths as ap

ROOT = Path(__file__).resolve().parents[2]
OVERRIDES = ROOT / ".binder" / "jupyter" / "labconfig" / "default_setting_overrides.json"
DOCMANAGER = "@jupyterlab/docmanager-extension:plugin"
CHAPTER = "theory"  # its first code cells import the package and print the scale: seconds after the kernel starts
STAMP = ".venv/.installed"  # the Makefile's venv stamp: `make -o` keeps the test from reinstalling the venv
CHAPTER_RUN_S = 600  # the kernel's start (numpy, torch, the package) and the whole chapter at quick: ~20 s quiet
SERVER_START_S = 90


def _make(*args, **kwargs):
    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    return subprocess.run(["make", "-s", "-o", STAMP, *args], cwd=ROOT, capture_output=True, text=True, **kwargs)


def _lab_env():
    out = _make("print-lab-env")
    assert out.returncode == 0, out.stderr
    return dict(line.split("=", 1) for line in out.stdout.splitlines())


def test_the_projects_jupyter_settings_open_markdown_as_a_jupytext_notebook():
    viewers = json.loads(OVERRIDES.read_text())[DOCMANAGER]["defaultViewers"]
    assert viewers["markdown"] == viewers["myst"] == "Jupytext Notebook"


def test_make_lab_puts_the_projects_settings_first_on_the_jupyter_config_path():
    env = _lab_env()
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == str(ROOT / ".binder" / "jupyter")
    assert env["REPRO_SCALE"] == os.environ.get("REPRO_SCALE", "quick")
    assert env["PYDEVD_DISABLE_FILE_VALIDATION"] == "1" and env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    # the reader's own JUPYTER_CONFIG_PATH and dataset root are kept
    kept = _make("print-lab-env", env={**os.environ, "JUPYTER_CONFIG_PATH": "/elsewhere", "ATTENTION_PATHS_DATA": "/d"})
    lines = kept.stdout.splitlines()
    assert f"JUPYTER_CONFIG_PATH={ROOT / '.binder' / 'jupyter'}{os.pathsep}/elsewhere" in lines
    assert "ATTENTION_PATHS_DATA=/d" in lines
    # the lab target runs JupyterLab in that environment, with the reader's extra options
    dry = _make("-n", "lab", "LAB_ARGS=--port 8890")
    assert dry.returncode == 0, dry.stderr
    assert "source .binder/lab-env.sh" in dry.stdout and "jupyter lab" in dry.stdout and "--port 8890" in dry.stdout
    # JupyterLab's own reader of labconfig/default_setting_overrides.json finds the viewers there
    code = (
        "import json; from jupyter_server.services.config.manager import ConfigManager; "
        "print(json.dumps(ConfigManager(config_dir_name='labconfig').get('default_setting_overrides')))"
    )
    read = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, check=True
    )
    assert json.loads(read.stdout)[DOCMANAGER]["defaultViewers"]["myst"] == "Jupytext Notebook"


def _find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(base, token, path, method="GET"):
    req = urllib.request.Request(f"{base}{path}", method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        body = resp.read()
    return json.loads(body) if body else None


@pytest.fixture
def lab_server(tmp_path):
    """`make lab` on 127.0.0.1 with a free port and a random token; its state (runtime files, workspaces, user
    settings) in tmp_path, not the home folder.  Yields (base url, token); stops kernels and server after."""
    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    port, token = _free_port(), secrets.token_hex(16)
    args = f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} --ServerApp.port_retries=0"
    args += " --LabApp.expose_app_in_browser=True"  # window.jupyterapp: the test waits for jupytext's viewer
    if os.geteuid() == 0:
        args += " --allow-root"  # CI containers run as root
    env = {
        **os.environ,
        "JUPYTER_TOKEN": token,
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "user-settings"),
    }
    # the test's own user settings: no autosave (the test saves once, itself), no question about Jupyter news over
    # the notebook, and every cell drawn (not only those in view), so the test reads all the rendered markdown;
    # the defaultViewers stay the project's
    settings = tmp_path / "user-settings" / "@jupyterlab"
    for plugin, values in (
        ("docmanager-extension/plugin", {"autosave": False}),
        ("apputils-extension/notification", {"fetchNews": "false"}),
        ("notebook-extension/tracker", {"windowingMode": "none"}),
    ):
        (settings / f"{plugin}.jupyterlab-settings").parent.mkdir(parents=True, exist_ok=True)
        (settings / f"{plugin}.jupyterlab-settings").write_text(json.dumps(values))
    log_path = tmp_path / "lab.log"
    base = f"http://127.0.0.1:{port}"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            ["make", "-s", "-o", STAMP, "lab", f"LAB_ARGS={args}"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: make, the shell and the server stop together
        )
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"make lab exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                _api(base, token, "/api/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"no /api/status after {SERVER_START_S} s:\n{log_path.read_text()[-3000:]}")
                time.sleep(0.5)
        yield base, token, log_path
    finally:
        try:  # the kernels run in their own sessions: shut them down through the server first
            for session in _api(base, token, "/api/sessions"):
                _api(base, token, f"/api/sessions/{session['id']}", method="DELETE")
        except OSError:
            pass
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


def _first_cell_printing_the_scale(chapter):
    """The index of the chapter's first code cell that prints REPRO_SCALE, in the notebook jupytext reads."""
    cells = jupytext.read(ROOT / "book" / f"{chapter}.md").cells
    for i, cell in enumerate(cells):
        if cell.cell_type == "code" and "REPRO_SCALE=" in cell.source:
            return i
    raise AssertionError(f"book/{chapter}.md has no code cell printing REPRO_SCALE")


def _git_clean(path):
    """Whether ``path`` is as committed (None outside a git checkout)."""
    if shutil.which("git") is None:
        return None
    out = subprocess.run(["git", "diff", "--quiet", "--", str(path)], cwd=ROOT, capture_output=True)
    return {0: True, 1: False}.get(out.returncode)


_IDLE = (
    "() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator')]"
    ".some(e => e.getAttribute('data-status') === 'idle')"
)
# every code cell's prompt shows an execution count: "[12]:" (not "[*]:" nor "[ ]:")
_ALL_RAN = (
    "() => { const p = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell "
    ".jp-InputArea-prompt')]; return p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.textContent)); }"
)


def _open_from_the_file_browser(page, base, token, chapter):
    """Open the chapter as a reader does, by double-clicking it in the file browser `make lab` starts in, once
    jupytext's viewer is registered (the app is exposed for the test: --LabApp.expose_app_in_browser)."""
    page.goto(f"{base}/lab/tree/book?token={token}")
    item = page.locator(f".jp-DirListing-item[title^='Name: {chapter}.md']")
    item.wait_for()
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.docRegistry.getWidgetFactory('Jupytext Notebook')"
    )
    item.dblclick()


def _run_all_and_save(page, notebook):
    """Run > Run All Cells from the menu, wait until every code cell ran and the kernel is idle, then Ctrl+S."""
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_text("Run All Cells", exact=True).click()
    page.wait_for_function(_ALL_RAN, timeout=CHAPTER_RUN_S * 1000)
    page.wait_for_function(_IDLE, timeout=CHAPTER_RUN_S * 1000)
    notebook.locator(".jp-Cell").first.locator(".jp-InputPrompt").click()  # command mode on the first cell
    page.keyboard.press("Control+s")
    page.locator(".jp-mod-current.jp-mod-dirty").wait_for(state="detached")  # the tab's unsaved mark is gone


@pytest.mark.slow
def test_make_lab_renders_a_chapters_myst_runs_it_and_saving_it_changes_nothing(lab_server, tmp_path):
    """Issue 53: open a chapter in `make lab`, read its MyST rendered (roles, cross-references, equations),
    run all its cells with no error, save it, and find the .md byte for byte as committed."""
    chromium = _find_chromium()
    if chromium is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install chromium)")
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    base, token, log_path = lab_server
    source = ROOT / "book" / f"{CHAPTER}.md"
    before, clean_before, mtime_before = source.read_bytes(), _git_clean(source), source.stat().st_mtime_ns
    target = _first_cell_printing_the_scale(CHAPTER)
    # CI keeps it with the built pages' screenshots, in a subfolder: test_pages.py counts the .png files at the top
    shots = Path(os.environ.get("PAGECHECK_SCREENSHOTS") or tmp_path) / "lab"
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            _open_from_the_file_browser(page, base, token, CHAPTER)
            notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
            editor = page.locator(".jp-FileEditor")
            notebook.or_(editor).first.wait_for()
            assert editor.count() == 0, "the chapter opened in the text editor, not as a notebook (viewer setting?)"
            cells = notebook.locator(".jp-Cell")
            cells.nth(target).wait_for(state="attached")
            # the chapter names the venv's python3 kernel; should JupyterLab still ask, take the kernel it offers
            dialog = page.locator(".jp-Dialog")
            try:
                dialog.wait_for(timeout=5_000)
                dialog.locator(".jp-mod-accept").click()
            except PlaywrightTimeout:  # no dialog: the kernel was started without asking
                pass
            page.screenshot(path=str(shots / f"{CHAPTER}.png"))  # the README's screenshot of a chapter in the lab
            markdown = "\n".join(notebook.locator(".jp-MarkdownCell").all_inner_texts())
            _run_all_and_save(page, notebook)
            output = cells.nth(target).locator(".jp-OutputArea-output")
            text = output.all_inner_texts()
            errors = notebook.locator("[data-mime-type='application/vnd.jupyter.error']").all_inner_texts()
            page.screenshot(path=str(shots / f"{CHAPTER}-ran.png"))
        finally:
            browser.close()
    # (b) MyST is rendered (jupyterlab-myst): no role's source is left, a cross-reference to a figure reads as
    # its target's name, an equation reference as its number, a citation as its key
    for role in ("{numref}`", "{eq}`", "{cite:t}`", "{cite:p}`", "```{math}", "(theory)="):
        assert role not in markdown, f"{role!r} shown as source in the lab"
    assert "fig-theory-gp-approach shows the deviation" in markdown
    assert re.search(r"one head per layer \(\(\d+\)\)", markdown), "an equation reference is not a number"
    assert "tiberi2024" in markdown
    # (a) every cell ran, none with an error, at the scale the lab was started with
    assert not errors, errors
    printed = "\n".join(text)
    scale = os.environ.get("REPRO_SCALE", "quick")
    assert f"REPRO_SCALE={scale}" in printed and f"attention_paths {ap.__version__}" in printed, printed
    sessions = _api(base, token, "/api/sessions")
    assert [s["kernel"]["name"] for s in sessions] == ["python3"]
    assert all(s["kernel"]["execution_state"] == "idle" for s in sessions)
    assert "Traceback" not in log_path.read_text()
    # (c) the save happened and wrote the chapter byte for byte as it was
    assert source.stat().st_mtime_ns > mtime_before, "the chapter was not saved"
    assert source.read_bytes() == before, "saving the chapter in the lab rewrote it (_ext/chapter_format.py)"
    if clean_before:
        diff = subprocess.run(["git", "diff", "--exit-code", "--", str(source)], cwd=ROOT, capture_output=True)
        assert diff.returncode == 0, diff.stdout.decode()[-2000:]
