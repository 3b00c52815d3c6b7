"""The hang detector of the book build and the chapter tests (_ext/hangwatch.py): a kernel that does no work
is stopped, a busy one never is, however long it runs; the settings the build and the tests run with."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "_ext"))
import hangwatch  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the watch reads /proc (Linux)")


def _fake_kernel(code: str) -> subprocess.Popen:
    # the command line names ipykernel_launcher, as a Jupyter kernel's does
    return subprocess.Popen([sys.executable, "-c", code, "ipykernel_launcher", "-f", "x.json"])


def test_an_idle_kernel_is_stopped_and_a_busy_one_is_not(capsys):
    idle = _fake_kernel("import time; time.sleep(120)")
    busy = _fake_kernel("import time\nt = time.time()\nwhile time.time() - t < 120: pass")
    # a kernel whose CPU goes to a child process (a subprocess it waits for) is working, too
    parent = _fake_kernel(
        "import subprocess, sys; subprocess.run([sys.executable, '-c', "
        "'import time\\nt = time.time()\\nwhile time.time() - t < 120: pass'])"
    )
    watch = hangwatch.HangWatch(quiet=2.0, interval=0.25)
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 8 and idle.pid not in watch.killed:
            watch.check()
            time.sleep(0.25)
        assert idle.pid in watch.killed and idle.wait(timeout=10) == -9
        for _ in range(12):  # 3 s more: the busy ones keep running
            watch.check()
            time.sleep(0.25)
        assert busy.poll() is None and parent.poll() is None
        assert watch.killed == [idle.pid]
        assert f"kernel {idle.pid} used no CPU" in capsys.readouterr().err
    finally:
        for p in (idle, busy, parent):
            p.kill()
            p.wait()


def test_the_quiet_time_is_a_positive_number_of_seconds():
    assert hangwatch.quiet_seconds({}) == 1200.0
    assert hangwatch.quiet_seconds({"BOOK_HANG_SECONDS": " 90 "}) == 90.0
    for bad in ("0", "-5", "soon", "nan"):
        with pytest.raises(ValueError, match="BOOK_HANG_SECONDS"):
            hangwatch.quiet_seconds({"BOOK_HANG_SECONDS": bad})


def test_the_build_and_the_chapter_tests_wait_for_slow_cells_and_watch_for_hangs():
    import yaml

    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert cfg["execute"]["timeout"] >= 6 * 3600  # a backstop: hours, not the 15 min that failed busy builds
    assert "hangwatch" in cfg["sphinx"]["local_extensions"]
    conftest = (ROOT / "conftest.py").read_text()
    assert "hangwatch.start()" in conftest and "CELL_TIMEOUT = 21600" in conftest
