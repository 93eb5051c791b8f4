"""A shared run (``instances`` on CPU): the scoring process takes images from the front, the helper from the back;
every value, the printed summary and results.json are byte for byte those of one process scoring everything, an input
error is the one a single process raises first, and the helper is reaped whatever happens."""

from __future__ import annotations

import multiprocessing
import os
import sys

import pytest

from nobg_metrics.cli.instances.shared_scoring import Claims, ForkedScoring
from tests.cli.core.test_shutdown import children
from tests.cli.instances.instances_data import make_dataset, write_dataset
from tests.cli.instances.test_reader_process import _args, _break, _outcome

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the helper process forks (Linux)")


def _take(claims: Claims, side: str, queue) -> None:
    taken = []
    while (index := (claims.front() if side == "front" else claims.back())) is not None:
        taken.append(index)
    queue.put(taken)


def test_the_two_sides_take_every_image_once_and_meet() -> None:
    claims = Claims()
    claims.set_count(5000)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    other = context.Process(target=_take, args=(claims, "back", queue))
    other.start()
    _take(claims, "front", queue)
    first, second = queue.get(timeout=60), queue.get(timeout=60)
    other.join(timeout=60)
    front, back = (first, second) if (first and first[0] == 0) or not second else (second, first)
    assert front == list(range(len(front)))  # the front side: 0, 1, ... in order
    assert back == list(range(4999, len(front) - 1, -1))  # the back side: n - 1, n - 2, ... down to the meeting
    assert sorted(front + back) == list(range(5000))


@pytest.mark.parametrize(("iou_type", "lvis", "with_bbox"), [("segm", False, True), ("boundary", False, False),
                                                              ("segm", True, False), ("boundary", True, True)])
def test_a_shared_run_writes_the_same_bytes_as_one_process(tmp_path, iou_type, lvis, with_bbox) -> None:
    gt, results = make_dataset(8, with_bbox=with_bbox, lvis=lvis, sizes=((45, 60), (37, 53), (105, 140)) * 5)
    paths = write_dataset(tmp_path, gt, results)
    made: list[ForkedScoring] = []

    def helper(args):
        made.append(ForkedScoring(args))
        return made[-1]
    outcomes = [_outcome(_args(*paths, "--iou-type", iou_type, "--out", str(tmp_path / name), "--no-report",
                               *(["--lvis"] if lvis else [])), chosen)
                for name, chosen in (("one", False), ("shared", helper))]
    assert outcomes[0][0] == 0 and outcomes[0] == outcomes[1]
    taken_from_front = made[0].claims.front_count()
    assert taken_from_front < len(gt["images"]), "the helper scored no image: nothing was shared"


@pytest.mark.parametrize("where", ["first image", "last image"])
@pytest.mark.parametrize("how", ["malformed string", "another size"])
def test_input_errors_of_either_share_are_those_one_process_raises(tmp_path, where, how) -> None:
    gt, results = make_dataset(4, with_bbox=False, sizes=((45, 60), (37, 53)) * 6)
    ids = sorted(image["id"] for image in gt["images"])
    image = ids[0] if where == "first image" else ids[-1]
    broken = [entry for entry in results if entry["image_id"] == image][:1]
    assert broken
    index = results.index(broken[0])
    bad = _break([results[index]], how, gt)[0]
    results = [*results[:index], bad, *results[index + 1:]]
    paths = write_dataset(tmp_path, gt, results)
    outcomes = [_outcome(_args(*paths), helper) for helper in (False, ForkedScoring)]
    assert outcomes[0][0] == 1 and f"(image {image})" in outcomes[0][2]
    assert outcomes[0] == outcomes[1]


def test_a_file_error_comes_through_and_the_helper_is_reaped(tmp_path) -> None:
    gt, results = make_dataset(4)
    gt_path, dt_path = write_dataset(tmp_path, gt, results)
    dt_path.write_text("[{")
    outcomes = [_outcome(_args(gt_path, dt_path), helper) for helper in (False, ForkedScoring)]
    assert outcomes[0][0] == 1 and outcomes[0] == outcomes[1]
    assert not children(os.getpid())


def test_the_helper_is_chosen_by_the_run_and_the_machine(monkeypatch) -> None:
    import argparse

    from nobg_metrics.cli.instances import reader_process

    monkeypatch.delitem(sys.modules, "torch")  # as at the command's start (restored after the test)
    monkeypatch.setattr(reader_process, "usable_cores", lambda: 2)
    monkeypatch.setattr(reader_process, "free_cores", lambda: 2)
    monkeypatch.setattr(reader_process, "_cpu_only", lambda device: device != "cuda")

    def kind(**flags):
        return reader_process.helper_kind(argparse.Namespace(**{"workers": "auto", "device": "auto", **flags}))
    assert kind() == "share"
    assert kind(errors="tide") == kind(bootstrap=100) == kind(compare="b.json") == kind(device="cuda") == "read"
    assert kind(workers="0") is None and kind(cityscapes=True) is None
    monkeypatch.setenv("WORLD_SIZE", "2")  # a torchrun rank: no helper of its own
    assert kind() is None
    monkeypatch.delenv("WORLD_SIZE")
    monkeypatch.setattr(reader_process, "free_cores", lambda: 1)  # another process holds a core
    assert kind() == "read"
    monkeypatch.setattr(reader_process, "usable_cores", lambda: 1)
    assert kind() is None and kind(workers="1") == "read"
