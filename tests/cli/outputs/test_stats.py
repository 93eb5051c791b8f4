"""cli.outputs.stats: the bootstrap intervals (by hand, vs numpy on the same index matrix, vs scipy on its own draws),
the paired sign-flip test (by hand, vs brute force, an obvious winner, identical methods), Holm, the ranking,
the choice of resampled metrics and the worst images."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from scipy import stats as scipy_stats

from nobg_metrics.cli.outputs.stats import (
    batch_rows,
    bootstrap_interval,
    bootstrap_means,
    generator,
    group_rows,
    holm,
    percentile_interval,
    ranks_with_ties,
    resample_indices,
    resampled_metrics,
    run_statistics,
    sign_flip_test,
    worst_images,
)


def _scipy_bootstrap(values: np.ndarray, rng: np.random.Generator, resamples: int, alpha: float):
    kwargs = {"n_resamples": resamples, "method": "percentile", "confidence_level": 1 - alpha,
              "batch": batch_rows(values.size)}
    try:
        return scipy_stats.bootstrap((values,), np.mean, rng=rng, **kwargs)
    except TypeError:  # scipy < 1.15 names it random_state
        return scipy_stats.bootstrap((values,), np.mean, random_state=rng, **kwargs)


# --- the bootstrap ---------------------------------------------------------------------------------------------------

def test_the_percentile_interval_by_hand():
    # values 0, 1, 2 resampled by the index rows [0,0,0], [1,1,1], [2,2,2], [0,1,2]: means 0, 1, 2, 1; sorted
    # 0, 1, 1, 2; linear quantiles at 0.025 * 3 = 0.075 and 0.975 * 3 = 2.925 -> 0.075 and 1 + 0.925
    values = np.array([0.0, 1.0, 2.0])
    index = np.array([[0, 0, 0], [1, 1, 1], [2, 2, 2], [0, 1, 2]])
    low, high = percentile_interval(values[index].mean(axis=1), 0.05)
    assert low == pytest.approx(0.075, abs=1e-15) and high == pytest.approx(1.925, abs=1e-15)


def test_constant_values_give_a_point_interval():
    assert bootstrap_interval(np.full(4, 0.25), generator(0, "D", "M", "mae"), 200, 0.05) == (0.25, 0.25)


def test_the_index_matrix_is_rng_integers_in_batches():
    n, resamples = 5000, 1000  # batch_rows(5000) = 838 < 1000: two batches
    assert batch_rows(n) < resamples
    drawn = np.concatenate(list(resample_indices(generator(1, "k"), n, resamples)))
    expected_rng = generator(1, "k")
    expected = np.concatenate([expected_rng.integers(0, n, (rows, n)) for rows in (838, 162)])
    assert drawn.shape == (resamples, n) and np.array_equal(drawn, expected)


@pytest.mark.parametrize("n, resamples", [(7, 999), (5000, 1000)])
def test_same_index_matrix_same_interval_as_numpy(n, resamples):
    """Our interval == numpy's percentile of the means over the very same (one-piece) index matrix."""
    values = np.random.default_rng(5).random(n)
    ours = bootstrap_interval(values, generator(2, "D", "M", "mae"), resamples, 0.05)
    rng = generator(2, "D", "M", "mae")
    means = np.concatenate([values[rng.integers(0, n, (rows, n))].mean(axis=1)
                            for rows in np.diff([*list(range(0, resamples, batch_rows(n))), resamples])])
    assert ours == tuple(float(q) for q in np.percentile(means, [2.5, 97.5]))


@pytest.mark.parametrize("n, resamples, alpha", [(5, 500, 0.05), (40, 2000, 0.1), (5000, 1000, 0.05)])
def test_equal_to_scipy_percentile_bootstrap(n, resamples, alpha):
    """scipy.stats.bootstrap(method="percentile") given the same seeded generator and batch draws the same index
    matrix (rng.integers(0, n, (batch, n)) per batch): the bootstrap distributions are bit-equal, the intervals
    equal to 1e-12 (scipy's own quantile function vs numpy's)."""
    values = np.random.default_rng(n).random(n) * 3 - 1
    key = (4, "DUTS-TE", "MINet", "s_measure")
    ours_means = bootstrap_means(values, generator(*key), resamples)
    result = _scipy_bootstrap(values, generator(*key), resamples, alpha)
    assert np.array_equal(ours_means, result.bootstrap_distribution)
    low, high = bootstrap_interval(values, generator(*key), resamples, alpha)
    assert abs(low - result.confidence_interval.low) <= 1e-12
    assert abs(high - result.confidence_interval.high) <= 1e-12


def test_seeded_draws_depend_only_on_their_keys():
    values = np.random.default_rng(0).random(30)
    first = bootstrap_interval(values, generator(7, "D", "M", "mae"), 300, 0.05)
    assert first == bootstrap_interval(values, generator(7, "D", "M", "mae"), 300, 0.05)
    assert first != bootstrap_interval(values, generator(8, "D", "M", "mae"), 300, 0.05)
    assert first != bootstrap_interval(values, generator(7, "D", "N", "mae"), 300, 0.05)


# --- the paired test, Holm, the ranking -------------------------------------------------------------------------------

def test_sign_flip_by_hand():
    # 16 sign vectors of (1, 2, 3, 4): only +-(1, 2, 3, 4) reach |sum| = 10
    assert sign_flip_test(np.array([1.0, 2.0, 3.0, 4.0]), 10000, generator(0)) == (0.125, True)
    # (1, -1, 2), observed |sum| = 2; the eight signed sums are 2, -2, 4, 0, 0, -4, 2, -2: six reach 2
    assert sign_flip_test(np.array([1.0, -1.0, 2.0]), 10000, generator(0)) == (0.75, True)


def test_sign_flip_exact_equals_brute_force():
    differences = np.random.default_rng(3).normal(0.05, 0.1, 9)
    observed = abs(differences.sum())
    sums = [abs(np.dot(signs, differences)) for signs in itertools.product((1.0, -1.0), repeat=9)]
    expected = sum(s >= observed - 1e-12 * np.abs(differences).sum() for s in sums) / 2 ** 9
    assert sign_flip_test(differences, 10000, generator(0)) == (expected, True)


def test_sign_flip_monte_carlo_is_close_to_exact_and_seeded():
    differences = np.random.default_rng(4).normal(0.02, 0.1, 14)  # 2^14 = 16384 sign vectors
    exact, is_exact = sign_flip_test(differences, 20000, generator(0))
    sampled, sampled_exact = sign_flip_test(differences, 4000, generator(1))
    assert is_exact and not sampled_exact
    assert abs(sampled - exact) < 0.03  # standard error ~ sqrt(p(1-p)/4000) < 0.008
    assert sampled == sign_flip_test(differences, 4000, generator(1))[0]


def test_an_obvious_winner_and_identical_methods():
    better = np.full(12, 0.1) + np.random.default_rng(0).random(12) * 0.01
    assert sign_flip_test(better, 10000, generator(0)) == (2 / 4096, True)
    p, exact = sign_flip_test(np.full(40, 0.1), 999, generator(0))  # Monte Carlo: no draw reaches all-plus
    assert not exact and p == 1 / 1000
    assert sign_flip_test(np.zeros(12), 10000, generator(0)) == (1.0, True)


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 times 3, 2, 1: 0.03, 0.06, 0.04 -> running max 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06], abs=1e-15)
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([]) == []


def test_ranks_count_the_significantly_better_methods():
    ranking = ranks_with_ties({"A": 0.1, "B": 0.2, "C": 0.3}, {("A", "C")}, higher=False)
    assert [(r["method"], r["rank"]) for r in ranking] == [("A", 1), ("B", 1), ("C", 2)]


# --- run_statistics ---------------------------------------------------------------------------------------------------

def _run(values: dict[str, list[float | None]], metric: str = "s_measure", higher: bool = True, curve: bool = False):
    """A document and rows for one dataset: per method the per-image values of ``metric`` (and a curve metric
    whose dataset value is not the per-image mean)."""
    rows, results = [], []
    for method, per_image in values.items():
        finite = [v for v in per_image if v is not None]
        for index, value in enumerate(per_image):
            rows.append({"dataset": "D", "method": method, "image": f"i{index:02d}", metric: value,
                         "f_measure_max": 0.5 + index / 100})
        results.append({"dataset": "D", "method": method, "metrics": {
            metric: sum(finite) / len(finite) if finite else None, "f_measure_max": 0.9}})
    document = {"metrics": [metric, "f_measure_max"], "results": results,
                "higher_is_better": {metric: higher, "f_measure_max": True}}
    return document, rows


def test_winner_and_identical_methods_in_run_statistics():
    base = list(np.random.default_rng(1).random(12) * 0.5)
    document, rows = _run({"A": [v + 0.3 for v in base], "B": base, "C": list(base)})
    stats = run_statistics(document, rows, resamples=200, seed=3)
    assert stats["resampled_metrics"] == ["s_measure"] and "f_measure_max" in stats["not_resampled"]
    entry = stats["datasets"][0]["metrics"]["s_measure"]
    pairs = {(p["a"], p["b"]): p for p in entry["pairs"]}
    assert pairs["A", "B"]["better"] == "A" and pairs["A", "B"]["p_value"] == 2 / 4096
    assert pairs["A", "B"]["p_holm"] == 3 * 2 / 4096 and pairs["A", "B"]["mean_difference"] == pytest.approx(0.3)
    assert pairs["B", "C"]["p_value"] == 1.0 and not pairs["B", "C"]["significant"]
    assert pairs["B", "C"]["better"] is None
    assert entry["ranking"][0]["method"] == "A"
    assert {r["method"]: r["rank"] for r in entry["ranking"]} == {"A": 1, "B": 2, "C": 2}
    low, high = entry["methods"]["A"]["ci"]
    assert low <= entry["methods"]["A"]["value"] <= high
    assert (low, high) == bootstrap_interval(np.array(base) + 0.3, generator(3, "D", "A"), 200, 0.05)


def test_lower_is_better_flips_the_winner_and_pairs_use_common_images():
    base = [0.1 * i for i in range(10)]
    document, rows = _run({"A": [v + 0.5 for v in base], "B": [*base[:9], None]}, metric="mae", higher=False)
    entry = run_statistics(document, rows, resamples=0)["datasets"][0]["metrics"]["mae"]
    pair = entry["pairs"][0]
    assert pair["images"] == 9 and pair["better"] == "B" and pair["p_value"] == 2 / 512
    assert entry["methods"]["A"]["ci"] is None and entry["methods"]["B"]["images"] == 9  # --bootstrap 0


def test_results_do_not_depend_on_the_order_of_rows_or_jobs():
    base = list(np.random.default_rng(2).random(8))
    document, rows = _run({"A": base, "B": [v * 0.9 for v in base]})
    stats = run_statistics(document, rows, resamples=100, seed=1)
    shuffled = list(rows)
    random.Random(0).shuffle(shuffled)
    other = dict(document, results=document["results"][::-1])
    again = run_statistics(other, shuffled, resamples=100, seed=1)
    for method in "AB":
        assert stats["datasets"][0]["metrics"]["s_measure"]["methods"][method]["ci"] == \
            again["datasets"][0]["metrics"]["s_measure"]["methods"][method]["ci"]


def test_the_resampled_metrics_are_checked_against_the_dataset_values():
    document, rows = _run({"A": [0.2, 0.4, None], "B": [None, None, None]})
    keep, reasons = resampled_metrics(document, group_rows(rows))
    assert keep == ["s_measure"]  # B has no value and no rows: not evidence either way
    assert "not the per-image mean" in reasons["f_measure_max"]
    document["results"][0]["metrics"]["s_measure"] = 0.31
    assert resampled_metrics(document, group_rows(rows))[0] == []


def test_worst_images_lowest_first_ties_in_image_order():
    document, rows = _run({"A": [0.5, 0.2, 0.2, None, 0.9]})
    worst = worst_images(document, group_rows(rows), 3)
    assert [w["image"] for w in worst[0]["images"]] == ["i01", "i02", "i00"]
    assert worst[1]["metric"] == "f_measure_max" and worst[1]["images"][0]["image"] == "i00"
    assert worst_images(document, group_rows(rows), 0) == []
