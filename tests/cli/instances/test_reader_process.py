"""``instances --workers 1``: the files read and decoded in a forked process give the scoring process exactly what it
reads itself (every index, every image's data, every error message, results.json byte for byte), and the helper
process (reading, or sharing the scoring: the command's default on CPU) never outlives the run: reaped when the run
ends, killed when it is cut short, gone with the command when the command is killed or interrupted."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nobg_metrics.cli.instances.reader_process import ForkedReading
from nobg_metrics.cli.instances.reading import Reading
from nobg_metrics.cli.instances.run import run_guarded
from nobg_metrics.cli.parser import build_parser
from tests.cli.core.test_shutdown import children
from tests.cli.instances.instances_data import make_dataset, write_dataset

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reading process forks (Linux)")


def _args(gt_path: Path, dt_path: Path, *extra: str) -> argparse.Namespace:
    args = build_parser().parse_args(["instances", "--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path),
                                      "--quiet", *extra])
    if args.dilation_ratio is None:
        args.dilation_ratio = 0.02
    return args


def _same_data(ours, theirs) -> None:
    assert ours.image_id == theirs.image_id
    for name in ("positions", "scores", "labels"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name), strict=True)
    assert (ours.box_areas is None) == (theirs.box_areas is None)
    if ours.box_areas is not None:
        np.testing.assert_array_equal(ours.box_areas, theirs.box_areas, strict=True)
    for field in dataclasses.fields(ours.forms):
        a, b = getattr(ours.forms, field.name), getattr(theirs.forms, field.name)
        if field.name == "string_runs" and a is not None:
            for x, y in zip(a, b, strict=True):  # sent as int32 where the positions fit
                assert x.dtype == np.int32 and y.dtype == np.int64
                np.testing.assert_array_equal(x.astype(np.int64), y, strict=True)
        elif field.name == "extents" and a is not None:
            for x, y in zip(a, b, strict=True):
                np.testing.assert_array_equal(x, y, strict=True)
        else:
            assert a == b, field.name


@pytest.mark.parametrize(("with_bbox", "lvis"), [(True, False), (False, False), (True, True), (False, True)])
def test_the_forked_reading_sends_what_the_scoring_process_reads(tmp_path, with_bbox, lvis):
    gt, results = make_dataset(3, with_bbox=with_bbox, lvis=lvis)
    args = _args(*write_dataset(tmp_path, gt, results), *(["--lvis"] if lvis else []))
    here = Reading(args)
    forked = ForkedReading(args)
    try:
        forked.open()
        assert forked.gt == here.gt
        assert forked.results == dataclasses.replace(here.results, per_image={})
        assert [image.id for image in forked.todo] == [image.id for image in here.todo]
        sent = list(forked.images())
        assert len(sent) == len(here.todo)
        for (image, data), (image_here, data_here) in zip(sent, here.images(), strict=True):
            assert image == image_here
            _same_data(data, data_here)
        assert forked.full_results() == here.results
    finally:
        forked.close()
    assert forked.pid is None


def _outcome(args: argparse.Namespace, forked: bool | type) -> tuple[int, str, str, dict[str, bytes]]:
    out, err = io.StringIO(), io.StringIO()
    helper = ForkedReading if forked is True else forked or None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = run_guarded(args, reading=helper(args) if helper else None)
    files = {path.name: path.read_bytes() for path in sorted(Path(args.out).iterdir())} if args.out and \
        Path(args.out).exists() else {}
    return status, out.getvalue(), err.getvalue(), files


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_a_run_with_the_reading_process_writes_the_same_bytes(tmp_path, iou_type):
    gt, results = make_dataset(5, with_bbox=False)
    paths = write_dataset(tmp_path, gt, results)
    outcomes = [_outcome(_args(*paths, "--iou-type", iou_type, "--out", str(tmp_path / name), "--no-report"), forked)
                for name, forked in (("here", False), ("forked", True))]
    assert outcomes[0][0] == 0 and outcomes[0] == outcomes[1]
    assert "results.json" in outcomes[0][3]


def _break(results: list[dict], how: str, gt: dict) -> list[dict]:
    broken = [dict(entry) for entry in results]
    target = broken[len(broken) // 2]
    if how == "malformed string":  # found by the counts decoder in the scoring process
        target["segmentation"] = {**target["segmentation"], "counts": "0o" + target["segmentation"]["counts"]}
    elif how == "another size":  # found while sorting the forms, in the reading process
        target["segmentation"] = {**target["segmentation"], "size": [1, 1]}
    elif how == "unknown image":  # found while reading the results file
        target["image_id"] = 10**9
    return broken


@pytest.mark.parametrize("how", ["malformed string", "another size", "unknown image", "not JSON"])
def test_input_errors_come_through_with_the_same_message_and_status(tmp_path, how):
    gt, results = make_dataset(4)
    gt_path, dt_path = write_dataset(tmp_path, gt, _break(results, how, gt))
    if how == "not JSON":
        dt_path.write_text('[{"image_id": 1,')
    outcomes = [_outcome(_args(gt_path, dt_path), forked) for forked in (False, True)]
    assert outcomes[0][0] == 1 and "failed" in outcomes[0][2]
    assert outcomes[0] == outcomes[1]


def test_a_run_cut_short_kills_and_reaps_the_reading_process(tmp_path):
    gt, results = make_dataset(6)
    args = _args(*write_dataset(tmp_path, gt, results))
    forked = ForkedReading(args)
    pid = forked.pid
    assert pid is not None and pid in children(os.getpid())
    forked.close()  # nothing read: the process may still be sending
    assert forked.pid is None and pid not in children(os.getpid())
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no zombie left either


def _command(gt_path: Path, dt_path: Path, out: Path) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-m", "nobg_metrics", "instances", "--gt-json-file", str(gt_path),
                             "--dt-json-file", str(dt_path), "--out", str(out), "--workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)


def _reader_of(process: subprocess.Popen) -> int:
    deadline = time.monotonic() + 60
    while not children(process.pid):
        assert process.poll() is None and time.monotonic() < deadline, "no reading process was started"
        time.sleep(0.02)
    return children(process.pid)[0]


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True  # dead, waiting for its (gone) parent's reaper
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("how", ["SIGINT to the group", "SIGTERM", "SIGKILL"])
def test_the_reading_process_never_outlives_the_command(tmp_path, how):
    gt, results = make_dataset(2)
    gt_path, _ = write_dataset(tmp_path, gt, results)
    fifo = tmp_path / "dt.json"
    fifo.unlink()
    os.mkfifo(fifo)  # the reading process blocks on it: the run is certainly under way
    process = _command(gt_path, fifo, tmp_path / "out")
    try:
        reader = _reader_of(process)
        deadline = time.monotonic() + 60  # the lock is taken once the signal handlers are in place, before the
        while not (tmp_path / "out" / ".nobg-metrics.lock").exists():  # command waits for the files' index
            assert process.poll() is None and time.monotonic() < deadline, "the command never took --out"
            time.sleep(0.02)
        if how == "SIGINT to the group":
            os.killpg(process.pid, signal.SIGINT)
        else:
            os.kill(process.pid, signal.SIGTERM if how == "SIGTERM" else signal.SIGKILL)
        status = process.wait(timeout=30)
        assert _gone(reader), f"the reading process {reader} outlived the command ({how})"
        expected = {"SIGINT to the group": 130, "SIGTERM": 143, "SIGKILL": -9}[how]
        assert status == expected, process.stderr.read().decode()[-2000:] if process.stderr else ""
        if how != "SIGKILL":  # handled: the lock released, nothing written
            assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
