"""Resampled COCO AP from kept statistics: exact with unit weights, equal to AP of the explicitly duplicated images."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nobg_metrics import MeanAveragePrecision
from nobg_metrics.functional import mean_average_precision
from nobg_metrics.functional.instance.ap_resampling import resampling_records, weighted_summary


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small records: thread start-up per operation dominates, and the machine is shared
    yield
    torch.set_num_threads(threads)


KEYS = ("map", "map_50", "map_75", "map_small", "map_medium", "map_large", "mar_1", "mar_10", "mar_100",
        "mar_small", "mar_medium", "mar_large")


def box_images(count: int, seed: int, within_ties: bool = False, shift: float = 0.0
               ) -> tuple[list[dict[str, torch.Tensor]], list[dict[str, torch.Tensor]]]:
    """Box detections of ``count`` images: 0-5 gts of 3 categories (some crowd, sizes over every area range),
    detections near them (some of another class, some poorly placed), background ones and duplicates; scores
    from a grid of 12 values, so that images share scores — distinct within an image unless ``within_ties``.
    ``shift``: added to every detection's offset (a worse model)."""
    rng = np.random.default_rng(seed)
    preds, target = [], []
    for index in range(count):
        g = int(rng.integers(0, 6))
        corner = rng.uniform(0, 300, (g, 2))
        size = rng.choice([12.0, 50.0, 130.0], g) * rng.uniform(0.8, 1.2, g)
        gt_boxes = np.concatenate([corner, corner + size[:, None]], 1)
        gt_labels = rng.integers(1, 4, g)
        crowd = rng.random(g) < 0.1
        det_boxes, det_labels = [], []
        for box, label in zip(gt_boxes, gt_labels):
            for _ in range(int(rng.integers(0, 3))):
                offset = rng.normal(0, 0.08 + shift, 2) * (box[2] - box[0])
                det_boxes.append(box + np.tile(offset, 2))
                det_labels.append(label if rng.random() < 0.85 else rng.integers(1, 4))
        for _ in range(int(rng.integers(0, 3))):
            c = rng.uniform(0, 300, 2)
            det_boxes.append(np.concatenate([c, c + rng.uniform(10, 120)]))
            det_labels.append(rng.integers(1, 4))
        d = len(det_boxes)
        grid = np.linspace(0.05, 0.95, 12)
        scores = rng.choice(grid, d, replace=within_ties) if d <= 12 or within_ties else rng.choice(grid, d)
        preds.append({"boxes": torch.tensor(np.array(det_boxes).reshape(-1, 4)), "scores": torch.tensor(scores),
                      "labels": torch.tensor(np.array(det_labels, dtype=np.int64))})
        target.append({"boxes": torch.tensor(gt_boxes.reshape(-1, 4)), "labels": torch.tensor(gt_labels),
                       "iscrowd": torch.tensor(crowd), "image_id": torch.tensor(index)})
    return preds, target


def states_of(preds: list, target: list) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The metric's values and its kept statistics with each record's image index."""
    metric = MeanAveragePrecision(iou_type="bbox", record_inputs=False)
    metric.update(preds, target)
    values = metric.compute()
    states = {name: torch.cat(getattr(metric, name)) for name in ("det_scores", "det_labels", "det_keys",
                                                                   "det_outcomes", "gt_labels", "gt_counted")}
    ids = torch.tensor([int(t["image_id"]) for t in target])
    states["det_image"] = torch.searchsorted(ids, states["det_keys"][:, 0].contiguous())
    states["gt_image"] = torch.repeat_interleave(torch.arange(len(target)),
                                                 torch.tensor([t["labels"].shape[0] for t in target]))
    return values, states


def test_unit_weights_give_the_exact_values() -> None:
    preds, target = box_images(60, 0, within_ties=True)
    values, states = states_of(preds, target)
    metric = MeanAveragePrecision(iou_type="bbox").options
    out = weighted_summary(resampling_records([states], len(target)), torch.ones(1, len(target)), metric)
    for key in KEYS:
        assert abs(float(out[key][0]) - float(values[key])) <= 1e-12, key


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_resample_is_the_ap_of_the_duplicated_images(seed: int) -> None:
    preds, target = box_images(40, seed)
    _, states = states_of(preds, target)
    options = MeanAveragePrecision(iou_type="bbox").options
    records = resampling_records([states], len(target))
    rng = np.random.default_rng(seed)
    weights = np.bincount(rng.integers(0, len(target), (4, len(target))).ravel()
                          + np.repeat(np.arange(4) * len(target), len(target)), minlength=4 * len(target))
    weights = torch.tensor(weights.reshape(4, len(target)), dtype=torch.float64)
    out = weighted_summary(records, weights, options)
    for row in range(weights.shape[0]):
        dup_preds, dup_target = [], []
        for image, copies in enumerate(weights[row].long().tolist()):  # copies adjacent, in image order
            for _ in range(copies):
                dup_preds.append(preds[image])
                dup_target.append({**target[image], "image_id": torch.tensor(len(dup_target))})
        exact = mean_average_precision(dup_preds, dup_target, iou_type="bbox", warn_on_many_detections=False)
        for key in KEYS:
            assert abs(float(out[key][row]) - float(exact[key])) <= 1e-12, (row, key)


def test_pooled_sources_with_exclusive_weights_give_the_mixed_results() -> None:
    preds_a, target = box_images(30, 4)
    preds_b, _ = box_images(30, 4, shift=0.1)
    _, states_a = states_of(preds_a, target)
    _, states_b = states_of(preds_b, target)
    options = MeanAveragePrecision(iou_type="bbox").options
    records = resampling_records([states_a, states_b], len(target))
    swap = torch.tensor(np.random.default_rng(0).integers(0, 2, len(target)), dtype=torch.float64)
    out = weighted_summary(records, torch.cat([1 - swap, swap])[None], options)
    mixed = [pb if s else pa for pa, pb, s in zip(preds_a, preds_b, swap.tolist())]
    exact = mean_average_precision(mixed, target, iou_type="bbox")
    for key in KEYS:
        assert abs(float(out[key][0]) - float(exact[key])) <= 1e-12, key


def test_batches_and_the_kept_plan_give_the_same_values(monkeypatch: pytest.MonkeyPatch) -> None:
    from nobg_metrics.functional.instance import ap_resampling

    preds, target = box_images(40, 5)
    _, states = states_of(preds, target)
    options = MeanAveragePrecision(iou_type="bbox").options
    weights = torch.tensor(np.random.default_rng(5).poisson(1.0, (7, len(target))), dtype=torch.float64)
    whole = weighted_summary(resampling_records([states], len(target)), weights, options)
    monkeypatch.setattr(ap_resampling, "_BATCH_BYTES", 1)  # one resample per batch
    records = resampling_records([states], len(target))
    for limit in (2.0**24, 0.0):  # the second call reuses the plan kept on the records, with float64 running sums
        monkeypatch.setattr(ap_resampling, "_SINGLE_EXACT", limit)
        split = weighted_summary(records, weights, options)
        assert len(records.plans) == 1
        for key in KEYS:
            assert torch.equal(split[key], whole[key]), key


def bank(count: int, seed: int, variants: int = 1, noise: float = 0.08) -> tuple[list[list[dict]], list[dict]]:
    """``count`` images of 1-3 gts (2 categories, 40-130 px) and ``variants`` independent draws of one model's
    detections on them: per gt a detection with probability 0.8 (offset ~ N(0, ``noise``) of its size), one
    background detection per image; scores uniform (a stronger model: smaller ``noise``)."""
    rng = np.random.default_rng(seed)
    target, boxes = [], []
    for index in range(count):
        g = int(rng.integers(1, 4))
        corner = rng.uniform(0, 300, (g, 2))
        size = rng.uniform(40, 130, g)
        boxes.append(np.concatenate([corner, corner + size[:, None]], 1))
        target.append({"boxes": torch.tensor(boxes[-1]), "labels": torch.tensor(rng.integers(1, 3, g)),
                       "image_id": torch.tensor(index)})
    draws = []
    for variant in range(variants):
        det_rng = np.random.default_rng([seed, variant, int(noise * 1000)])
        preds = []
        for gt, t in zip(boxes, target):
            found = det_rng.random(gt.shape[0]) < 0.8
            offset = det_rng.normal(0, noise, (gt.shape[0], 2)) * (gt[:, 2:] - gt[:, :2])
            c = det_rng.uniform(0, 300, 2)
            dets = np.concatenate([(gt + np.tile(offset, 2))[found], np.concatenate([c, c + 60])[None]])
            labels = np.concatenate([t["labels"].numpy()[found], det_rng.integers(1, 3, 1)])
            preds.append({"boxes": torch.tensor(dets), "scores": torch.tensor(det_rng.random(dets.shape[0])),
                          "labels": torch.tensor(labels)})
        draws.append(preds)
    return draws, target


def coverage(sets: int, size: int, resamples: int, alpha: float) -> dict[str, float]:
    """How often the percentile interval of ``sets`` data sets of ``size`` images covers the known ``mar_100`` /
    ``mar_10``. A data set is drawn with replacement from a bank of 150 images: its population is the bank, whose
    recall (a ratio of sums over images) is known exactly. A data set's bootstrap resample is a multiplicity vector
    over its draws, i.e. over the bank's images: the bank's records serve every data set."""
    from nobg_metrics.cli.outputs.summary_stats import finite_interval

    (preds,), target = bank(150, 11)
    truth, states = states_of(preds, target)
    options = MeanAveragePrecision(iou_type="bbox").options
    records = resampling_records([states], len(target))
    rng = np.random.default_rng(0)
    covered = {"mar_100": 0, "mar_10": 0}
    for _ in range(sets):
        drawn = rng.integers(0, len(target), size)
        picks = drawn[rng.integers(0, size, (resamples, size))]  # the bootstrap of that data set
        weights = np.zeros((resamples, len(target)))
        np.add.at(weights, (np.repeat(np.arange(resamples), size), picks.ravel()), 1.0)
        out = weighted_summary(records, torch.from_numpy(weights), options)
        for key in covered:
            low, high = finite_interval(out[key].numpy(), alpha)
            covered[key] += low <= float(truth[key]) <= high
    return {key: hits / sets for key, hits in covered.items()}


def test_percentile_intervals_cover_a_known_recall() -> None:
    sets, alpha = 150, 0.1
    for key, fraction in coverage(sets, 100, 100, alpha).items():  # within 3 binomial SDs of 1 - alpha
        assert abs(fraction - (1 - alpha)) <= 3 * np.sqrt(alpha * (1 - alpha) / sets), (key, fraction)


def swap_p_values(pairs: int, better: bool, permutations: int) -> list[float]:
    """p of ``map`` by the command's statistics (swap test only) for ``pairs`` data sets of 20 images drawn from
    a bank of 300, each scored by two draws of one model (``better``: the second draw is of a noisier model)."""
    import argparse

    from nobg_metrics.cli.instances.stats import statistics

    draws, target = bank(300, 21, variants=3)
    worse, _ = bank(300, 21, variants=1, noise=0.25)
    kept = [states_of(preds, target)[1] for preds in draws + worse]
    options = MeanAveragePrecision(iou_type="bbox").options
    rng = np.random.default_rng(1)
    out = []
    for pair in range(pairs):
        images = np.sort(rng.choice(len(target), 20, replace=False))
        a, b = rng.choice(3, 2, replace=False)
        sides = {"a": slice_images(kept[a], images), "b": slice_images(kept[3 if better else b], images)}
        estimates = {name: {f"bbox/{key}": float(value[0]) for key, value in
                            weighted_summary(resampling_records([s], 20), torch.ones(1, 20), options).items()}
                     for name, s in sides.items()}
        args = argparse.Namespace(bootstrap=0, seed=pair, alpha=0.05, permutations=permutations, compare=None)
        document = statistics(args, sides, estimates, 20, options)
        out.append(document["comparisons"][0]["values"]["bbox/map"]["p_value"])
    return out


def slice_images(states: dict[str, torch.Tensor], images: np.ndarray) -> dict[str, torch.Tensor]:
    """The kept statistics of the chosen images (ascending), renumbered 0.. (matching is per image)."""
    chosen = torch.from_numpy(images)
    out = {}
    det = torch.isin(states["det_image"], chosen)
    gt = torch.isin(states["gt_image"], chosen)
    for name in ("det_scores", "det_labels", "det_keys", "det_outcomes"):
        out[name] = states[name][det]
    for name in ("gt_labels", "gt_counted"):
        out[name] = states[name][gt]
    out["det_image"] = torch.searchsorted(chosen, states["det_image"][det])
    out["gt_image"] = torch.searchsorted(chosen, states["gt_image"][gt])
    return out


def test_swap_test_p_values_are_uniform_for_alike_models_and_small_for_a_better_one() -> None:
    from scipy import stats

    p = np.array(swap_p_values(100, better=False, permutations=99))
    assert stats.kstest(p, "uniform").pvalue > 0.01
    assert np.all(np.histogram(p, bins=10, range=(0, 1))[0] > 0)  # every decile
    assert max(swap_p_values(3, better=True, permutations=199)) < 0.01


def test_the_recall_bin_count_equals_searchsorted() -> None:
    from nobg_metrics.functional.instance.ap_resampling import _reached

    coco = torch.tensor(np.linspace(0.0, 1.00, 101), dtype=torch.float64)
    uneven = torch.tensor([0.0, 0.1, 0.5, 0.55, 1.0], dtype=torch.float64)
    ratios = torch.cat([torch.arange(n + 1, dtype=torch.float64) / n for n in range(1, 400)])
    near = torch.cat([coco, torch.nextafter(coco, torch.tensor(2.0)), torch.nextafter(coco, torch.tensor(-1.0))])
    for rec in (coco, uneven):
        for rc in (ratios, near.clamp(min=0)):
            assert torch.equal(_reached(rec, rc), torch.searchsorted(rec, rc, right=True))
