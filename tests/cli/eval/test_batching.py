"""``cli.eval.batching``: a dataset's methods side by side, gt chunk by gt chunk; every item once."""

from __future__ import annotations

from pathlib import Path

from nobg_metrics.cli.eval.batching import batches_by_gt
from nobg_metrics.cli.eval.jobs import Item


def _items(job: int, dataset: str, names: list[str]) -> list[Item]:
    return [Item(job, name, Path(dataset) / "gt" / f"{name}.png", Path(f"m{job}") / f"{name}.png") for name in names]


def _shown(items: list[Item], batches: list[list[int]]) -> list[list[str]]:
    return [[f"{items[i].job}:{items[i].name}" for i in batch] for batch in batches]


def test_a_method_missing_a_gt_gets_a_smaller_batch_and_the_chunks_stay_aligned() -> None:
    items = _items(0, "D", ["a", "b", "c", "d"]) + _items(1, "D", ["a", "c", "d"])  # method 1 lacks "b"
    batches = batches_by_gt(items, {0: "D", 1: "D"}, 2)
    assert _shown(items, batches) == [["0:a", "0:b"], ["1:a"], ["0:c", "0:d"], ["1:c", "1:d"]]


def test_datasets_are_contiguous_and_every_item_is_batched_once() -> None:
    items = _items(0, "D", ["a", "b", "c"]) + _items(1, "E", ["x", "y"]) + _items(2, "D", ["a", "b", "c"])
    batches = batches_by_gt(items, {0: "D", 1: "E", 2: "D"}, 2)
    assert _shown(items, batches) == [["0:a", "0:b"], ["2:a", "2:b"], ["0:c"], ["2:c"], ["1:x", "1:y"]]
    assert sorted(i for batch in batches for i in batch) == list(range(len(items)))
    assert batches_by_gt(items, {0: "D", 1: "E", 2: "D"}, 0) == batches_by_gt(items, {0: "D", 1: "E", 2: "D"}, 1)
