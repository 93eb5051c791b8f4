"""Image-level statistics of PQ from kept per-image sums (nobg_metrics.cli.panoptic.stats, cli.outputs.summary_stats):
the resampled PQ equals the compute step on the same sums, the sums equal an explicit loop over the drawn images,
the 90 % interval covers a known population PQ about 90 % of the time, and the paired swap test is uniform for
two models alike in distribution and small for a clearly better one."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats as st

from nobg_metrics.cli.outputs.stats import bootstrap_sums, generator, resample_indices, swap_matrices
from nobg_metrics.cli.outputs.summary_stats import family_statistics, swap_test
from nobg_metrics.cli.panoptic.stats import FIELDS, pq_values
from nobg_metrics.functional.panoptic.panoptic_quality import _panoptic_compute

ISTHING = np.array([True, True, True, False, False])
IDS = [1, 2, 3, 10, 11]
RATES = np.array([[3.0, 1.0, 1.0], [1.0, 2.0, 0.5], [0.5, 0.5, 2.0], [1.0, 0.2, 0.2], [0.8, 0.6, 0.1]])
"""Per category: Poisson means of TP, FP, FN per image; each TP has an IoU uniform on (0.5, 1)."""


def _images(rng: np.random.Generator, n: int, rates: np.ndarray = RATES, iou_low: float = 0.5) -> np.ndarray:
    """(n, C * 4) per-image statistics (:data:`FIELDS` per category)."""
    counts = rng.poisson(rates, size=(n, *rates.shape)).astype(np.float64)
    iou = np.array([[rng.uniform(iou_low, 1.0, int(k)).sum() for k in row] for row in counts[..., 0]])
    return np.concatenate([counts, iou[..., None]], axis=2).reshape(n, -1)


def _true_pq(rates: np.ndarray = RATES, mean_iou: float = 0.75) -> float:
    """The population PQ (all classes): per class E[IoU sum] / (E[TP] + E[FP] / 2 + E[FN] / 2), then the mean."""
    tp, fp, fn = rates.T
    return float(np.mean(mean_iou * tp / (tp + 0.5 * fp + 0.5 * fn)))


def _summarise(sums: np.ndarray) -> dict[str, np.ndarray]:
    values = pq_values(sums, ISTHING, IDS)
    return {name: values[name] for name in ("All/pq", "Things/sq", "Stuff/rq")}


def test_pq_values_equal_the_compute_step():
    rng = np.random.default_rng(0)
    sums = _images(rng, 6).reshape(6, len(IDS), len(FIELDS))
    sums[2, 4] = 0  # a class with no TP, FP, FN: left out of the means
    sums[3, 3:] = 0  # no stuff at all: the stuff means are 0 (panopticapi's rules here)
    sums[4, :, 0] = 0  # no TP: SQ 0
    values = pq_values(sums.reshape(6, -1), ISTHING, IDS)
    for row in range(6):
        tp, fp, fn, iou = (torch.tensor(sums[row, :, k]) for k in range(4))
        limbs = (iou * 2.0**53).round().long()  # iou_sums((high << 26) + low, 2^-53): the same float64 sums
        expected = _panoptic_compute(limbs >> 26, limbs & ((1 << 26) - 1), tp.long(), fp.long(), fn.long(),
                                     torch.tensor(ISTHING), torch.tensor(IDS), empty=0.0)
        for group, suffix in (("All", ""), ("Things", "_things"), ("Stuff", "_stuff")):
            for name in ("pq", "sq", "rq"):
                assert values[f"{group}/{name}"][row] == pytest.approx(float(expected[name + suffix]), abs=1e-12)
        for k, category in enumerate(IDS):
            present = sums[row, k, :3].sum() > 0
            got = values[f"per_class/{category}/pq"][row]
            assert (np.isnan(got) and not present) or got == pytest.approx(float(expected["pq_per_class"][k]))


def test_bootstrap_sums_equal_the_drawn_images_summed():
    table = _images(np.random.default_rng(1), 9)
    sums = bootstrap_sums(table, generator(3, "k"), 7)
    index = np.concatenate(list(resample_indices(generator(3, "k"), 9, 7)))
    assert np.allclose(sums, np.stack([table[row].sum(axis=0) for row in index]), rtol=1e-13, atol=1e-12)


def test_swap_vectors_are_the_sign_vectors():
    swaps, exact = swap_matrices(3, 100, generator(0))
    assert exact and sorted(map(tuple, np.concatenate(list(swaps)).tolist())) == sorted(
        tuple(float(b) for b in format(k, "03b")[::-1]) for k in range(8))


def test_the_interval_holds_the_estimate_and_is_seeded():
    table = _images(np.random.default_rng(2), 40)
    estimate = {name: float(v[0]) for name, v in _summarise(table.sum(axis=0)[None]).items()}

    def run(seed: int) -> dict:
        return family_statistics({"A": table}, _summarise, {"A": estimate}, unit="image", resamples=300, seed=seed,
                                 alpha=0.1, permutations=10, family="t")["results"]["A"]

    first = run(0)
    for entry in first.values():
        assert entry["low"] <= entry["estimate"] <= entry["high"]
        assert (entry["unit"], entry["units"], entry["resamples"], entry["alpha"]) == ("image", 40, 300, 0.1)
    assert run(0) == first and run(1) != first


def test_coverage_of_the_90_percent_interval():
    """200 data sets of 150 images from known rates; the 90 % interval of All/pq covers the population PQ in a
    fraction within 3 binomial standard deviations of 0.9 (sd = sqrt(0.9 * 0.1 / 200) = 0.021: [0.836, 0.964])."""
    rng = np.random.default_rng(3)
    truth, repetitions = _true_pq(), 200
    covered = 0
    for repetition in range(repetitions):
        table = _images(rng, 150)
        estimate = {"All/pq": float(_summarise(table.sum(axis=0)[None])["All/pq"][0])}
        entry = family_statistics({"A": table}, lambda s: {"All/pq": _summarise(s)["All/pq"]}, {"A": estimate},
                                  unit="image", resamples=400, seed=repetition, alpha=0.1, permutations=1,
                                  family="coverage")["results"]["A"]["All/pq"]
        covered += entry["low"] <= truth <= entry["high"]
    tolerance = 3 * np.sqrt(0.9 * 0.1 / repetitions)
    assert abs(covered / repetitions - 0.9) <= tolerance, covered


def test_the_paired_test_is_uniform_for_models_alike_and_small_for_a_better_one():
    """100 pairs of models drawn from the same rates (each image's A and B independent): the p-values pass a
    Kolmogorov-Smirnov test of uniformity (p > 0.01) and none of the 10 deciles is empty or holds more than 25;
    a model with fewer FP / FN and better IoUs gets p < 0.01 (999 swap vectors: the smallest p is 0.001)."""
    rng = np.random.default_rng(4)

    def summarise(sums: np.ndarray) -> dict[str, np.ndarray]:
        return {"All/pq": pq_values(sums, ISTHING, IDS)["All/pq"]}

    p_values = []
    for repetition in range(100):
        a, b = _images(rng, 60), _images(rng, 60)
        p, exact = swap_test(a, b, summarise, 199, generator(repetition, "uniform"))
        assert not exact
        p_values.append(p["All/pq"])
    assert st.kstest(p_values, "uniform").pvalue > 0.01
    histogram = np.histogram(p_values, bins=10, range=(0, 1))[0]
    assert histogram.min() >= 1 and histogram.max() <= 25, histogram
    better_rates = RATES * np.array([1.0, 0.5, 0.5])
    a, b = _images(rng, 60, better_rates, iou_low=0.6), _images(rng, 60)
    p, _ = swap_test(a, b, summarise, 999, generator(0, "better"))
    assert p["All/pq"] < 0.01


def test_identical_results_give_p_one_and_a_zero_difference():
    table = _images(np.random.default_rng(5), 12)
    estimate = {name: float(v[0]) for name, v in _summarise(table.sum(axis=0)[None]).items()}
    stats = family_statistics({"A": table, "B": table.copy()}, _summarise, {"A": estimate, "B": estimate},
                              unit="image", resamples=50, seed=0, alpha=0.05, permutations=100, family="same")
    for entry in stats["comparisons"][0]["values"].values():
        assert entry["difference"] == 0 and entry["low"] == entry["high"] == 0
        assert entry["p_value"] == 1.0 and not entry["significant"] and entry["better"] is None
