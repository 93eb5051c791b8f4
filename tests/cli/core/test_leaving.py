"""The console script leaves without the interpreter's teardown (``os._exit``) once the command has returned: its
status, its streams (flushed, also into pipes) and its ``atexit`` handlers are all as a normal exit leaves them; a
still-running thread makes it end the usual way."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import atexit, sys, threading
from nobg_metrics.cli.entry import console
atexit.register(lambda: print("atexit ran", flush=True))
if len(sys.argv) > 1 and sys.argv[1] == "thread":
    threading.Thread(target=lambda: (__import__("time").sleep(0.5), print("thread done")), daemon=False).start()
print("before", end="")  # unflushed: the leaving must flush it
console({argv})
"""


@pytest.mark.parametrize(("argv", "status"), [(["--version"], 0), (["instances", "--gt-json-file", "missing.json",
                                                                      "--dt-json-file", "missing.json"], 1),
                                               (["instances", "--no-such-flag"], 2)])
def test_the_status_the_streams_and_atexit_are_those_of_a_normal_exit(tmp_path, argv, status):
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(argv=argv)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == status, done.stderr
    assert done.stdout.startswith("before") and done.stdout.rstrip().endswith("atexit ran"), done.stdout
    if status == 1:
        assert "missing.json" in done.stderr


def test_a_running_thread_is_waited_for(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(argv=["--version"]), "thread"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0 and "thread done" in done.stdout and "atexit ran" in done.stdout


def test_a_profiler_still_writes_its_data(tmp_path):
    out = tmp_path / "profile.out"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "nobg_metrics", "instances",
                           "--gt-json-file", "missing.json", "--dt-json-file", "missing.json"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert "no such file" in done.stderr and out.exists() and out.stat().st_size > 0, done.stderr
