"""Fault injection: ``nobg-metrics eval`` as a subprocess, stopped by SIGINT / SIGTERM at several points
(during start-up, once the run holds ``--out``, while scoring), with ``--procs 1`` and ``--procs 2``, sent
to the main process, to the whole process group (Ctrl-C in a terminal), to one rank, or to a decoding
worker. Every time: no process of the run survives (they are found by scanning /proc for a marker in
their command line — forked ranks and workers inherit it — and checked with ``os.kill(pid, 0)``), and the
previous outputs in ``--out`` are exactly as they were (no half-written file, no temporary folder, no
lock file). While one run holds ``--out`` a second one fails at once (exit status 4).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from nobg_metrics.cli.eval.main import EXIT_BUSY, main
from tests.cli.folders import make_maps

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")

IMAGES = 320
"""Enough 256² images that scoring (the expensive tier) lasts well beyond the moment a signal is sent."""

PREVIOUS = {"results.json": b'{"previous": "complete"}\n', "table.md": b"previous table\n",
            "notes.txt": b"a file of the user's\n"}

START_TIMEOUT_S = 60.0
"""How long a point of the run may take to come (generous: the machine may be loaded)."""

STOP_TIMEOUT_S = 15.0
"""How long every process of the run may take to be gone after the signal."""


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("shutdown")
    maps = list(make_maps(count=8, shape=(256, 256), seed=3).values())
    (root / "gt").mkdir()
    (root / "pred").mkdir()
    for index in range(IMAGES):
        gt, pred = maps[index % len(maps)]
        Image.fromarray(gt).save(root / "gt" / f"img_{index:03d}.png", compress_level=1)
        Image.fromarray(np.roll(pred, index, axis=1)).save(root / "pred" / f"img_{index:03d}.png", compress_level=1)
    return root


def _env() -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NOBG_METRICS_LAUNCHED"):
        env.pop(name, None)
    return env


def run_pids(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` (zombies have none and are not listed)."""
    needle, found = marker.encode(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if needle not in handle.read():
                    continue
            os.kill(int(entry), 0)
        except (OSError, ProcessLookupError):
            continue
        found.append(int(entry))
    return found


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from each process's /proc stat), oldest first."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append((int(fields[19]), int(entry)))  # start time, pid
    return [pid for _, pid in sorted(found)]


class Run:
    """The command in its own session (so that a group signal reaches it alone); stderr collected."""

    def __init__(self, data: Path, out: Path, procs: int, extra: tuple[str, ...] = ()) -> None:
        self.out = out
        command = [sys.executable, "-m", "nobg_metrics", "eval", "--gt", f"DS={data / 'gt'}", "--pred",
                   f"M={data / 'pred'}", "--out", str(out), "--procs", str(procs), "--workers", "1",
                   "--device", "cpu", "--no-plots", "--batch-size", "2", *extra]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(),
                                        start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in iter(self.process.stderr.readline, b""):
            self.lines.append(line.decode(errors="replace"))

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def wait_for(self, condition, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not condition():
            if self.process.poll() is not None:
                pytest.fail(f"the run ended (status {self.process.returncode}) before {what}:\n{self.stderr[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {what} within {START_TIMEOUT_S} s:\n{self.stderr[-3000:]}")
            time.sleep(0.02)

    def scoring(self) -> bool:
        return any(line.startswith("DS / M") for line in self.lines)  # a progress line: "DS / M  [...]  0/320"

    def finish(self) -> int:
        try:
            status = self.process.wait(timeout=STOP_TIMEOUT_S + 30)
        except subprocess.TimeoutExpired:
            status = None
        self._reader.join(timeout=10)
        return status

    def kill_all(self) -> None:
        for pid in run_pids(str(self.out)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _previous_outputs(out: Path) -> None:
    out.mkdir()
    for name, content in PREVIOUS.items():
        (out / name).write_bytes(content)


def _assert_nothing_left(run: Run, killed: bool = False) -> None:
    deadline = time.monotonic() + STOP_TIMEOUT_S
    survivors = run_pids(str(run.out))
    while survivors and time.monotonic() < deadline:
        time.sleep(0.1)
        survivors = run_pids(str(run.out))
    if survivors:
        described = [Path(f"/proc/{pid}/stat").read_text(errors="replace")[:80] for pid in survivors
                     if Path(f"/proc/{pid}/stat").exists()]
        run.kill_all()
        pytest.fail(f"processes of the run still alive {STOP_TIMEOUT_S} s after the signal: {described}\n"
                    f"{run.stderr[-3000:]}")
    left = sorted(set(os.listdir(run.out)) - ({".nobg-metrics.lock"} if killed else set()))  # SIGKILL: no cleanup
    assert left == sorted(PREVIOUS), run.stderr[-3000:]  # no temp folder, no lock
    for name, content in PREVIOUS.items():
        assert (run.out / name).read_bytes() == content, name


def _target(run: Run, who: str, procs: int) -> int:
    """The pid to signal: the command itself, its last rank (``--procs 2``) or its decoding worker."""
    if who == "main":
        return run.process.pid
    wanted = procs if who == "rank" else 1  # the command's children: ranks (launcher) or workers (one process)
    run.wait_for(lambda: len(children(run.process.pid)) >= wanted, f"{wanted} {who}(s)")
    return children(run.process.pid)[-1]


def _interrupt(data: Path, tmp_path: Path, procs: int, point: str, signum: int, who: str = "main",
               group: bool = False) -> tuple[Run, int | None]:
    out = tmp_path / "out"
    _previous_outputs(out)
    run = Run(data, out, procs)
    try:
        if point == "start":  # most likely still importing: before any handler is installed
            time.sleep(0.3)
        elif point == "locked":  # the run holds --out: handlers installed, nothing scored yet
            run.wait_for(lambda: (out / ".nobg-metrics.lock").exists(), "the --out lock")
        else:
            run.wait_for(run.scoring, "progress line")
        pid = _target(run, who, procs)
        if group:
            os.killpg(os.getpgid(run.process.pid), signum)
        else:
            os.kill(pid, signum)
        status = run.finish()
        _assert_nothing_left(run, killed=signum == signal.SIGKILL and who == "main")
    finally:
        run.kill_all()
    return run, status


def _expect_handled(run: Run, status: int | None, signum: int) -> None:
    assert status == 128 + signum, (status, run.stderr[-3000:])
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert "interrupted" in run.stderr or "stopped by" in run.stderr, run.stderr[-3000:]


# --procs 1 -----------------------------------------------------------------------------------------------


def test_sigint_at_start_leaves_nothing(data: Path, tmp_path: Path) -> None:
    """0.3 s in, the command is still importing torch: it ends quietly (no traceback), status 130."""
    run, status = _interrupt(data, tmp_path, 1, "start", signal.SIGINT)
    _expect_handled(run, status, signal.SIGINT)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_before_scoring_leaves_nothing(data: Path, tmp_path: Path, signum: int) -> None:
    run, status = _interrupt(data, tmp_path, 1, "locked", signum)
    _expect_handled(run, status, signum)


@pytest.mark.slow
def test_sigint_while_scoring_stops_it_and_a_second_run_is_refused(data: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    _previous_outputs(out)
    run = Run(data, out, 1)
    try:
        run.wait_for(run.scoring, "progress line")
        # a second run into the same --out fails at once, before scoring, and changes nothing
        started = time.monotonic()
        assert main(["eval", "--gt", str(data / "gt"), "--pred", str(data / "pred"), "--out", str(out),
                     "--workers", "0", "--quiet", "--no-plots", "--metrics", "mae"]) == EXIT_BUSY
        assert time.monotonic() - started < 10
        err = capsys.readouterr().err
        assert "in use by another nobg-metrics run" in err and f"pid {run.process.pid}" in err
        assert "Traceback" not in err
        os.kill(run.process.pid, signal.SIGINT)
        status = run.finish()
        _assert_nothing_left(run)
    finally:
        run.kill_all()
    _expect_handled(run, status, signal.SIGINT)


@pytest.mark.slow
def test_sigterm_while_scoring_leaves_nothing(data: Path, tmp_path: Path) -> None:
    run, status = _interrupt(data, tmp_path, 1, "scoring", signal.SIGTERM)
    _expect_handled(run, status, signal.SIGTERM)


@pytest.mark.slow
def test_sigkill_of_the_command_takes_its_workers_along(data: Path, tmp_path: Path) -> None:
    _run, status = _interrupt(data, tmp_path, 1, "scoring", signal.SIGKILL)
    assert status == -signal.SIGKILL  # its decoding worker died with it (PR_SET_PDEATHSIG): checked above


@pytest.mark.slow
def test_sigint_of_a_decoding_worker_stops_the_run_in_order(data: Path, tmp_path: Path) -> None:
    run, status = _interrupt(data, tmp_path, 1, "scoring", signal.SIGINT, who="worker")
    _expect_handled(run, status, signal.SIGINT)  # the worker passes it on to the scoring process


@pytest.mark.slow
def test_sigterm_of_a_decoding_worker_stops_the_run(data: Path, tmp_path: Path) -> None:
    run, status = _interrupt(data, tmp_path, 1, "scoring", signal.SIGTERM, who="worker")
    assert status == 3, (status, run.stderr[-3000:])  # a worker killed outright: the run fails
    assert "Traceback" not in run.stderr and "decoding worker" in run.stderr, run.stderr[-3000:]


# --procs 2 -----------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_procs_two_launcher_signalled_before_scoring(data: Path, tmp_path: Path, signum: int) -> None:
    run, status = _interrupt(data, tmp_path, 2, "locked", signum)
    _expect_handled(run, status, signum)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_procs_two_launcher_signalled_while_scoring(data: Path, tmp_path: Path, signum: int) -> None:
    run, status = _interrupt(data, tmp_path, 2, "scoring", signum)
    _expect_handled(run, status, signum)


@pytest.mark.slow
def test_procs_two_ctrl_c_of_the_process_group(data: Path, tmp_path: Path) -> None:
    run, status = _interrupt(data, tmp_path, 2, "scoring", signal.SIGINT, group=True)
    _expect_handled(run, status, signal.SIGINT)


@pytest.mark.slow
def test_procs_two_sigkill_of_the_launcher_takes_ranks_and_workers_along(data: Path, tmp_path: Path) -> None:
    _run, status = _interrupt(data, tmp_path, 2, "scoring", signal.SIGKILL)
    assert status == -signal.SIGKILL


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_procs_two_one_rank_signalled_while_scoring(data: Path, tmp_path: Path, signum: int) -> None:
    run, status = _interrupt(data, tmp_path, 2, "scoring", signum, who="rank")
    _expect_handled(run, status, signum)
