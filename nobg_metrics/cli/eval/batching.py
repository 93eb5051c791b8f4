"""The loader's batches: a dataset's methods side by side, chunk of gts by chunk of gts.

Every method of a dataset is scored against the same gts, and some metrics spend most of their time on the gt
alone (the weighted F-measure's exact distance transform). The batches are therefore laid out so that equal gt
batches follow each other: the dataset's gts in order (of first appearance over its jobs), cut into chunks of
``batch_size``; for each chunk, one batch per job holding that job's items of the chunk's gts. Under
:func:`nobg_metrics.ops.gt_reuse.reuse_gt_work` the second and later methods of a chunk reuse the first one's
gt-only work (exact: an equal gt batch is checked value by value). A job that lacks some gt of a chunk
(``--allow-missing``) gets a smaller batch there, and only that batch computes afresh.

Examples:
    >>> from pathlib import Path
    >>> from nobg_metrics.cli.eval.jobs import Item
    >>> items = [Item(job, f"i{n}", Path(f"gt/i{n}.png"), Path(f"m{job}/i{n}.png")) for job in (0, 1) for n in range(3)]
    >>> [[f"{items[i].job}:{items[i].name}" for i in batch] for batch in batches_by_gt(items, {0: "D", 1: "D"}, 2)]
    [['0:i0', '0:i1'], ['1:i0', '1:i1'], ['0:i2'], ['1:i2']]
"""

from __future__ import annotations

from nobg_metrics.cli.eval.jobs import Item


def batches_by_gt(items: list[Item], dataset_of: dict[int, str], batch_size: int) -> list[list[int]]:
    """Indices into ``items`` grouped into loader batches, gt chunk by gt chunk, one batch per job and chunk.

    Args:
        items: this rank's items, in the order the jobs list them.
        dataset_of: each job index's dataset name (jobs of one name share its gts).
        batch_size: gts per chunk (at least 1).

    Returns:
        every index of ``items`` exactly once, in batches of at most ``batch_size``; a dataset's batches are
        contiguous, its jobs in their order of first appearance.
    """
    size = max(batch_size, 1)
    datasets: dict[str, dict[int, dict[int, list[int]]]] = {}  # dataset -> chunk -> job -> indices
    gt_order: dict[str, dict[object, int]] = {}
    for index, item in enumerate(items):
        dataset = dataset_of[item.job]
        order = gt_order.setdefault(dataset, {})
        position = order.setdefault(item.gt, len(order))
        chunks = datasets.setdefault(dataset, {})
        chunks.setdefault(position // size, {}).setdefault(item.job, []).append(index)
    batches: list[list[int]] = []
    for chunks in datasets.values():
        for chunk in sorted(chunks):
            batches += chunks[chunk].values()
    return batches
