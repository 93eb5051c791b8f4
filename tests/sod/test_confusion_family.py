"""The confusion family equals PySODMetrics 1.6.2 ``FmeasureV2`` with every handler, in every mode.

Every handler (F-measure with β² = 0.3 and 1, precision, recall, specificity, FPR, IoU, Dice, overall accuracy,
BER, kappa) is run by the real ``FmeasureV2`` with ``with_dynamic``, ``with_adaptive`` and ``with_binary``, once
with ``sample_based=True`` and once with ``sample_based=False``; our functions must equal its dynamic curve
(``mode="curve"``), ``dynamic.max()`` / ``dynamic.mean()``, the adaptive and the binary values (mean and pooled),
on whole datasets and on one image at a time, to 1e-12. Cohen's kappa is checked against the formula written
here in numpy and run through the reference's own binarisations (:class:`CohenKappaHandler`), the AUCs against
PySODMetrics' recipe ported to numpy on the reference's mean curves.

Also: the ``empty_gt="agreement"`` policy on degenerate gts, option validation, and functional == class.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import py_sod_metrics as psm
import pytest
import torch
from py_sod_metrics.fmeasurev2 import _BaseHandler

import nobg_metrics as nm
from nobg_metrics import functional as F
from tests.helpers.data import float_pairs, sod_pairs

ATOL = 1e-12
MODES = ("curve", "max", "mean", "adaptive", "binary", "pooled")
"""Our modes; ``"pooled"`` is ``mode="binary", reduction="pooled"`` (the reference's ``sample_based=False``)."""

WORST: dict[str, float] = dict.fromkeys((*MODES, "auc"), 0.0)
"""The largest absolute difference against the reference seen per mode (printed at the end of the module)."""


class CohenKappaHandler(_BaseHandler):
    """Cohen's kappa in numpy: ``pe = [(tp+fp)(tp+fn) + (tn+fn)(tn+fp)] / N²``, ``(oa - pe) / (1 - pe)``, with the
    reference's safe divide; run by ``FmeasureV2`` so that it sees the reference's own TP/FP/TN/FN."""

    def __call__(self, tp, fp, tn, fn):
        tp, fp, tn, fn = (np.asarray(value, dtype=np.float64) for value in (tp, fp, tn, fn))
        n = tp + fp + tn + fn
        oa = self.divide(tp + tn, n)
        pe = self.divide((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp), n**2)
        return self.divide(oa - pe, 1 - pe)


class CountsHandler(_BaseHandler):
    """The reference's TP, FP, TN, FN themselves, stacked on the first axis (for the agreement policy)."""

    def __call__(self, tp, fp, tn, fn):
        return np.stack([np.asarray(value, dtype=np.float64) for value in (tp, fp, tn, fn)])


def _handlers(sample_based: bool) -> dict[str, _BaseHandler]:
    kw = {"with_dynamic": True, "with_adaptive": True, "with_binary": True, "sample_based": sample_based}
    return {
        "fm": psm.FmeasureHandler(**kw, beta=0.3),
        "f1": psm.FmeasureHandler(**kw, beta=1),
        "precision": psm.PrecisionHandler(**kw),
        "recall": psm.RecallHandler(**kw),
        "specificity": psm.SpecificityHandler(**kw),
        "fpr": psm.FPRHandler(**kw),
        "iou": psm.IOUHandler(**kw),
        "dice": psm.DICEHandler(**kw),
        "accuracy": psm.OverallAccuracyHandler(**kw),
        "ber": psm.BERHandler(**kw),
        "kappa": psm.KappaHandler(**kw),
        "kappa_cohen": CohenKappaHandler(**kw),
    }


OURS = {
    "fm": functools.partial(F.f_measure, beta2=0.3),
    "f1": functools.partial(F.f_measure, beta2=1.0),
    "precision": F.precision,
    "recall": F.recall,
    "specificity": F.specificity,
    "fpr": F.fpr,
    "iou": F.iou_metric,
    "dice": F.dice,
    "accuracy": F.accuracy,
    "ber": F.ber,
    "kappa": F.kappa,  # chance="reference" implied by empty_gt="reference"
    "kappa_cohen": functools.partial(F.kappa, chance="cohen"),
}
MEMBERS = tuple(OURS)


def ours(member: str, preds, gts, mode: str, normalize: bool, empty_gt: str = "reference", **extra) -> torch.Tensor:
    """Our value of ``member`` in ``mode`` (``"pooled"``: binary with ``reduction="pooled"``)."""
    mode, reduction = ("binary", "pooled") if mode == "pooled" else (mode, "mean")
    return OURS[member](preds, gts, mode=mode, reduction=reduction, normalize=normalize, empty_gt=empty_gt, **extra)


# ---------------------------------------------------------------------------------------------------- data


def _stress_uint8() -> list[tuple[np.ndarray, np.ndarray]]:
    """uint8 (pred, gt) corner cases beyond tests.helpers.data."""
    rng = np.random.default_rng(11)
    pairs = []
    # many small components: isolated pixels and 2x2 blocks on a grid
    gt = np.zeros((21, 26), np.uint8)
    gt[::3, ::3] = 255
    gt[1::6, 1::6] = 255
    pairs.append((np.clip(gt * 0.6 + rng.integers(0, 100, gt.shape), 0, 255).astype(np.uint8), gt))
    pairs.append((rng.integers(0, 256, gt.shape).astype(np.uint8), gt.copy()))
    # a gt of one pixel: random, perfect and constant predictions
    one = np.zeros((9, 11), np.uint8)
    one[4, 5] = 255
    pairs += [(rng.integers(0, 256, one.shape).astype(np.uint8), one), (one.copy(), one.copy()),
              (np.full(one.shape, 90, np.uint8), one.copy())]
    # constant predictions equal to 0 and to 255 on a blob gt (the stretch leaves a constant map alone)
    blob = np.zeros((13, 15), np.uint8)
    blob[3:9, 4:12] = 255
    pairs += [(np.zeros(blob.shape, np.uint8), blob), (np.full(blob.shape, 255, np.uint8), blob.copy())]
    # 1x1 images
    for pred, gt_value in ((0, 0), (255, 255), (128, 0), (77, 255), (0, 255), (255, 0)):
        pairs.append((np.full((1, 1), pred, np.uint8), np.full((1, 1), gt_value, np.uint8)))
    # a hard 0/255 prediction; a grey-only gt (127/128/129: 128 is background, > 128 is strict)
    hard = np.where(rng.random((8, 19)) < 0.4, 255, 0).astype(np.uint8)
    pairs.append((hard, np.where(rng.random((8, 19)) < 0.5, 255, 0).astype(np.uint8)))
    grey = rng.choice(np.array([127, 128, 129], np.uint8), size=(10, 7))
    pairs.append((rng.integers(0, 256, grey.shape).astype(np.uint8), grey))
    # stretched middle levels at (or an ulp from) the binary threshold 0.5: lo, (lo + hi) / 2, hi
    for lo, hi in ((0, 254), (1, 255), (10, 200), (3, 101)):
        levels = np.array([lo, (lo + hi) // 2, hi], np.uint8)
        pred = levels[np.arange(4 * 6) % 3].reshape(4, 6)
        pairs.append((pred, np.where(np.arange(24).reshape(4, 6) % 2 == 0, 255, 0).astype(np.uint8)))
    return pairs


def _stress_float() -> list[tuple[np.ndarray, np.ndarray]]:
    """float64 + bool corner cases: the stress set / 255, and values at and an ulp around 0.5."""
    pairs = [(pred / 255, gt > 128) for pred, gt in _stress_uint8()]
    half = np.array([0.5, np.nextafter(0.5, 1), np.nextafter(0.5, 0), 0.0, 1.0, 1 / 255, 0.999, 0.25, 0.5, 0.75])
    gt = np.array([True, True, False, False, True, False, True, False, True, False])
    pairs.append((half.reshape(2, 5), gt.reshape(2, 5)))
    pairs.append((np.zeros((3, 4)), np.zeros((3, 4), bool)))
    pairs.append((np.ones((3, 4)), np.ones((3, 4), bool)))
    return pairs


@dataclass(frozen=True)
class Dataset:
    pairs: list  # numpy (pred, gt) for the reference
    preds: list  # torch tensors for us
    gts: list
    normalize: bool


@functools.cache
def dataset(name: str) -> Dataset:
    pairs = {"uint8": lambda: sod_pairs(0), "float64": lambda: float_pairs(1), "stress_uint8": _stress_uint8,
             "stress_float64": _stress_float}[name]()
    preds = [torch.from_numpy(np.ascontiguousarray(p)) for p, _ in pairs]
    gts = [torch.from_numpy(np.ascontiguousarray(g)) for _, g in pairs]
    return Dataset(pairs, preds, gts, normalize=name.endswith("uint8"))


DATASETS = ("uint8", "float64", "stress_uint8", "stress_float64")


def _run(pairs, normalize: bool, sample_based: bool) -> dict:
    evaluator = psm.FmeasureV2(metric_handlers=_handlers(sample_based))
    for pred, gt in pairs:
        evaluator.step(pred, gt, normalize=normalize)
    return evaluator.get_results()


def _expected(pairs, normalize: bool) -> dict[str, dict[str, np.ndarray | float]]:
    """``{member: {mode: reference value}}`` from the real FmeasureV2 (sample_based True and False)."""
    sample, pooled = _run(pairs, normalize, True), _run(pairs, normalize, False)
    out = {}
    for member in MEMBERS:
        dynamic = sample[member]["dynamic"]
        assert dynamic.shape == (256,)
        np.testing.assert_array_equal(pooled[member]["dynamic"], dynamic)  # sample_based only moves binary
        out[member] = {"curve": dynamic, "max": dynamic.max(), "mean": dynamic.mean(),
                       "adaptive": sample[member]["adaptive"], "binary": sample[member]["binary"],
                       "pooled": pooled[member]["binary"]}
    return out


@functools.cache
def reference(name: str) -> dict:
    """The reference on the whole dataset and on each image alone, computed once per module run."""
    data = dataset(name)
    return {"dataset": _expected(data.pairs, data.normalize),
            "images": [_expected([pair], data.normalize) for pair in data.pairs]}


@pytest.fixture(scope="module", autouse=True)
def _report_worst():
    yield
    print("\nworst |ours - PySODMetrics| per mode:", {mode: f"{value:.3g}" for mode, value in WORST.items()})


def _close(actual: torch.Tensor, expected, mode: str, what: str) -> None:
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.dtype == torch.float64, what
    assert tuple(actual.shape) == expected.shape, f"{what}: shape {tuple(actual.shape)} != {expected.shape}"
    diff = float(np.abs(actual.numpy() - expected).max()) if expected.size else 0.0
    WORST[mode] = max(WORST[mode], diff)
    assert diff <= ATOL, f"{what}: |diff| = {diff:.3g}\nours {actual.numpy()}\nreference {expected}"


# ---------------------------------------------------------------------------------------------------- parity


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("member", MEMBERS)
def test_dataset_equals_fmeasurev2(name, member):
    data, expected = dataset(name), reference(name)["dataset"][member]
    for mode in MODES:
        value = ours(member, data.preds, data.gts, mode, data.normalize)
        _close(value, expected[mode], mode, f"{name} {member} {mode}")


@pytest.mark.parametrize("name", DATASETS)
def test_each_image_alone_equals_fmeasurev2(name):
    data, images = dataset(name), reference(name)["images"]
    for index, expected in enumerate(images):
        pred, gt = data.preds[index : index + 1], data.gts[index : index + 1]
        for member in MEMBERS:
            for mode in MODES:
                value = ours(member, pred, gt, mode, data.normalize)
                _close(value, expected[member][mode], mode,
                       f"{name} image {index} {tuple(pred[0].shape)} {member} {mode}")


def test_one_image_as_a_2d_tensor_equals_fmeasurev2():
    data, images = dataset("uint8"), reference("uint8")["images"]
    for index in (0, 2, 3, 11):  # a blob, an empty, a full and a 1xN image
        for member in MEMBERS:
            for mode in MODES:
                value = ours(member, data.preds[index], data.gts[index], mode, True)
                _close(value, images[index][member][mode], mode, f"2-D tensor image {index} {member} {mode}")


def test_stacked_batch_equals_fmeasurev2():
    data = dataset("uint8")
    same = [i for i, p in enumerate(data.preds) if tuple(p.shape) == (37, 53)]
    expected = _expected([data.pairs[i] for i in same], True)
    preds = torch.stack([data.preds[i] for i in same])[:, None]
    gts = torch.stack([data.gts[i] for i in same])[:, None]
    for member in MEMBERS:
        for mode in MODES:
            _close(ours(member, preds, gts, mode, True), expected[member][mode], mode, f"(B, 1, H, W) {member} {mode}")


def test_kappa_reference_chance_is_implied_explicit_and_differs_from_cohen():
    data = dataset("uint8")
    expected = reference("uint8")["dataset"]
    for mode in MODES:
        implied = ours("kappa", data.preds, data.gts, mode, True)
        explicit = ours("kappa", data.preds, data.gts, mode, True, chance="reference")
        assert torch.equal(implied, explicit), mode
        _close(explicit, expected["kappa"][mode], mode, f"kappa chance='reference' {mode}")
    # with agreement and no chance given, Cohen's formula is the default
    agreement = F.kappa(data.preds, data.gts, normalize=True)
    assert torch.equal(agreement, F.kappa(data.preds, data.gts, normalize=True, chance="cohen"))
    # the two formulas really differ on this data (the comparison above is not vacuous)
    assert abs(expected["kappa"]["binary"] - expected["kappa_cohen"]["binary"]) > 1e-3
    assert abs(expected["kappa"]["pooled"] - expected["kappa_cohen"]["pooled"]) > 1e-3


def test_confusion_curves_equal_the_dynamic_results():
    data, expected = dataset("uint8"), reference("uint8")["dataset"]
    names = {"precision": "precision", "recall": "recall", "specificity": "specificity", "fpr": "fpr", "iou": "iou",
             "dice": "dice", "accuracy": "accuracy", "ber": "ber", "kappa": "kappa", "f_measure": "fm", "f1": "f1"}
    curves = F.confusion_curves(data.preds, data.gts, tuple(names), normalize=True, empty_gt="reference")
    for ours_name, member in names.items():
        _close(curves[ours_name], expected[member]["curve"], "curve", f"confusion_curves {ours_name}")
    np.testing.assert_array_equal(curves["thresholds"].numpy(), np.arange(255, -1, -1) / 255)
    cohen = F.confusion_curves(data.preds, data.gts, ("kappa",), normalize=True, empty_gt="reference", chance="cohen")
    _close(cohen["kappa"], expected["kappa_cohen"]["curve"], "curve", "confusion_curves kappa cohen")
    f1 = F.confusion_curves(data.preds, data.gts, ("f_measure",), beta2=1.0, normalize=True, empty_gt="reference")
    _close(f1["f_measure"], expected["f1"]["curve"], "curve", "confusion_curves f_measure beta2=1")


# ---------------------------------------------------------------------------------------------------- AUC


def auc_recipe(y: np.ndarray, x: np.ndarray) -> float:
    """PySODMetrics' AUC on mean curves stored with thresholds descending: flip to ascending thresholds,
    stable-sort by x, trapezoid rule, no end points."""
    y, x = y[::-1], x[::-1]
    order = np.argsort(x, kind="stable")
    trapezoid = getattr(np, "trapezoid", None) or np.trapz
    return float(trapezoid(y[order], x[order]))


@pytest.mark.parametrize("name", DATASETS)
def test_pr_and_roc_auc_follow_the_recipe(name):
    data, ref = dataset(name), reference(name)
    for expected, pred, gt in [(ref["dataset"], data.preds, data.gts)] + [
        (image, data.preds[i : i + 1], data.gts[i : i + 1]) for i, image in enumerate(ref["images"])
    ]:
        pr = auc_recipe(expected["precision"]["curve"], expected["recall"]["curve"])
        roc = auc_recipe(expected["recall"]["curve"], expected["fpr"]["curve"])
        _close(F.pr_auc(pred, gt, normalize=data.normalize, empty_gt="reference"), pr, "auc", f"{name} pr_auc")
        _close(F.roc_auc(pred, gt, normalize=data.normalize, empty_gt="reference"), roc, "auc", f"{name} roc_auc")
    for cls, y, x in ((nm.PRAUC, "precision", "recall"), (nm.ROCAUC, "recall", "fpr")):
        metric = cls(normalize=data.normalize, empty_gt="reference")
        half = len(data.preds) // 2
        metric.update(data.preds[:half], data.gts[:half])
        metric.update(data.preds[half:], data.gts[half:])
        expected = auc_recipe(ref["dataset"][y]["curve"], ref["dataset"][x]["curve"])
        _close(metric.compute(), expected, "auc", f"{name} {cls.__name__}")


def test_auc_recipe_is_not_sklearn_style():
    """The recipe adds no end points: a perfect single image scores less than 1 on PR (the curve starts at
    recall > 0) — our value equals the recipe, whatever that gives."""
    pred = torch.tensor([[0.9, 0.8, 0.1, 0.3]], dtype=torch.float64)
    gt = torch.tensor([[True, True, False, False]])
    precision = F.precision(pred, gt, mode="curve", empty_gt="reference").numpy()
    recall = F.recall(pred, gt, mode="curve", empty_gt="reference").numpy()
    fpr = F.fpr(pred, gt, mode="curve", empty_gt="reference").numpy()
    assert F.pr_auc(pred, gt, empty_gt="reference").item() == pytest.approx(auc_recipe(precision, recall), abs=ATOL)
    assert F.roc_auc(pred, gt, empty_gt="reference").item() == pytest.approx(auc_recipe(recall, fpr), abs=ATOL)


# ---------------------------------------------------------------------------------------------------- ties


@pytest.mark.parametrize(
    ("values", "as_type", "normalize"),
    [
        ([13, 186, 80], "uint8", False),  # 2 * mean = 186/255 exactly in exact arithmetic
        ([136, 5, 154, 41, 224], "float64", False),  # 2 * mean = 224/255
        ([236, 68, 200, 0, 22, 74], "uint8", True),  # 2 * mean = stretched 200
    ],
)
def test_adaptive_threshold_at_a_pixel_value_rounds_as_the_reference(values, as_type, normalize):
    """The adaptive rule ``pred >= min(2 · mean(pred), 1)`` with 2·mean equal to a pixel value up to rounding: the
    reference's numpy mean (pixel-order pairwise sum) decides the tie; ours must decide it the same way."""
    levels = np.array([values], np.uint8)
    gt = np.zeros(levels.shape, bool)
    gt[0, 1:] = True
    pair = (levels, np.where(gt, 255, 0).astype(np.uint8)) if normalize else (levels / 255, gt)
    expected = _expected([pair], normalize)
    pred = torch.from_numpy(levels if as_type == "uint8" else levels / 255)
    for member in ("recall", "precision", "iou", "fm"):  # fm: PySODMetrics' adpF goes through the same rule
        value = ours(member, [pred], [torch.from_numpy(gt)], "adaptive", normalize)
        diff = abs(value.item() - float(expected[member]["adaptive"]))
        assert diff <= ATOL, f"{member} adaptive on {values} ({as_type}, normalize={normalize}): " \
                             f"ours {value.item()} != reference {float(expected[member]['adaptive'])}"


# ---------------------------------------------------------------------------------------------------- agreement


AGREEMENT_MEMBERS = {**OURS, "kappa_reference": functools.partial(F.kappa, chance="reference"),
                     "e_measure": F.e_measure}
LOWER_IS_BETTER = {"fpr", "ber"}


def _reference_counts(pair, normalize: bool) -> dict[str, np.ndarray]:
    """The reference's own [TP, FP, TN, FN] of one image: (4, 256) dynamic, (4,) adaptive and binary."""
    handler = CountsHandler(with_dynamic=True, with_adaptive=True, with_binary=True)
    evaluator = psm.FmeasureV2(metric_handlers={"counts": handler})
    evaluator.step(*pair, normalize=normalize)
    return {"curve": handler.dynamic_results[0], "adaptive": handler.adaptive_results[0],
            "binary": handler.binary_results[0]}


def _degenerate_images():
    for name in ("uint8", "stress_uint8", "stress_float64"):  # both count paths (uint8 levels, float values)
        data = dataset(name)
        for index, (_pred, gt) in enumerate(data.pairs):
            mask = gt > 128 if gt.dtype == np.uint8 else gt
            if mask.all() or not mask.any():
                yield name, index


def test_the_data_holds_degenerate_images_of_both_kinds():
    kinds = set()
    for name, index in _degenerate_images():
        gt = dataset(name).pairs[index][1]
        kinds.add(bool((gt > 128).all() if gt.dtype == np.uint8 else gt.all()))
    assert kinds == {True, False}


def test_agreement_scores_pixel_agreement_on_degenerate_gts():
    checked = 0
    for name, index in _degenerate_images():
        data = dataset(name)
        counts = _reference_counts(data.pairs[index], data.normalize)
        pred, gt = data.preds[index : index + 1], data.gts[index : index + 1]
        for member, function in AGREEMENT_MEMBERS.items():
            for mode in ("curve", "adaptive", "binary"):
                tp, fp, tn, fn = counts[mode]
                agreement = (tp + tn) / (tp + fp + tn + fn)
                expected = 1 - agreement if member in LOWER_IS_BETTER else agreement
                value = function(pred, gt, mode=mode, normalize=data.normalize)
                _close_agreement(value, expected, f"{name} image {index} {member} {mode}")
                if mode == "curve":
                    for derived, reduce in (("max", np.max), ("mean", np.mean)):
                        value = function(pred, gt, mode=derived, normalize=data.normalize)
                        _close_agreement(value, reduce(expected), f"{name} image {index} {member} {derived}")
                checked += 1
    assert checked > 100


def _close_agreement(value: torch.Tensor, expected, what: str) -> None:
    expected = np.asarray(expected, np.float64)
    assert tuple(value.shape) == expected.shape, what
    diff = float(np.abs(value.numpy() - expected).max())
    assert diff <= ATOL, f"{what}: ours {value.numpy()} != agreement {expected}"


def test_pooled_agreement_applies_to_the_summed_counts():
    # a dataset of only empty gts: the pooled counts are degenerate too
    data = dataset("uint8")
    empty = [i for i, (_, gt) in enumerate(data.pairs) if not (gt > 128).any()]
    assert len(empty) >= 3
    summed = sum(_reference_counts(data.pairs[i], True)["binary"] for i in empty)
    tp, _fp, tn, _fn = summed
    agreement = (tp + tn) / summed.sum()
    preds, gts = [data.preds[i] for i in empty], [data.gts[i] for i in empty]
    for member, function in AGREEMENT_MEMBERS.items():
        if member == "e_measure":
            continue
        value = function(preds, gts, mode="binary", reduction="pooled", normalize=True)
        expected = 1 - agreement if member in LOWER_IS_BETTER else agreement
        assert abs(value.item() - expected) <= ATOL, (member, value.item(), expected)
    # one non-degenerate image in the pool: the pooled value is the reference's again
    mixed = [*empty, 0]
    expected = _expected([data.pairs[i] for i in mixed], True)
    for member in MEMBERS:
        value = ours(member, [data.preds[i] for i in mixed], [data.gts[i] for i in mixed], "pooled", True,
                     empty_gt="agreement", **({"chance": "reference"} if member == "kappa" else {}))
        _close(value, expected[member]["pooled"], "pooled", f"pooled agreement, mixed pool, {member}")


@pytest.mark.parametrize("name", ("uint8", "float64"))
def test_agreement_changes_nothing_on_non_degenerate_gts(name):
    data = dataset(name)
    keep = [i for i, (_, gt) in enumerate(data.pairs)
            if 0 < np.count_nonzero(gt > 128 if gt.dtype == np.uint8 else gt) < gt.size]
    expected = _expected([data.pairs[i] for i in keep], data.normalize)
    preds, gts = [data.preds[i] for i in keep], [data.gts[i] for i in keep]
    for member in MEMBERS:
        extra = {"chance": "reference"} if member == "kappa" else {}
        for mode in MODES:
            value = ours(member, preds, gts, mode, data.normalize, empty_gt="agreement", **extra)
            _close(value, expected[member][mode], mode, f"{name} non-degenerate, agreement, {member} {mode}")


def test_a_perfect_prediction_of_a_degenerate_gt_scores_perfectly():
    cases = [(torch.zeros(1, 6, 5, dtype=torch.float64), torch.zeros(1, 6, 5, dtype=torch.bool)),
             (torch.ones(1, 6, 5, dtype=torch.float64), torch.ones(1, 6, 5, dtype=torch.bool)),
             (torch.zeros(1, 4, 4, dtype=torch.uint8), torch.zeros(1, 4, 4, dtype=torch.uint8)),
             (torch.full((1, 1, 1), 255, dtype=torch.uint8), torch.full((1, 1, 1), 255, dtype=torch.uint8))]
    for pred, gt in cases:
        for member, function in AGREEMENT_MEMBERS.items():
            perfect = 0.0 if member in LOWER_IS_BETTER else 1.0
            # "max" is the curve's maximum, the worst FPR/BER: only the higher-is-better members reach 1 there
            modes = ("binary",) + (("pooled",) if member != "e_measure" else ()) + (
                ("max",) if member not in LOWER_IS_BETTER else ())
            for mode in modes:
                kwargs = {"mode": "binary", "reduction": "pooled"} if mode == "pooled" else {"mode": mode}
                value = function(pred, gt, **kwargs)
                assert value.item() == perfect, (member, mode, pred.dtype, gt.all().item(), value.item())
        # the reference policy keeps PySODMetrics' guarded values instead: an empty gt gives IoU = 0
        if not gt.any():
            assert F.iou_metric(pred, gt, empty_gt="reference").item() == 0.0
            assert F.ber(pred, gt, empty_gt="reference").item() == 0.5


# ---------------------------------------------------------------------------------------------------- options


PRED = torch.tensor([[0.9, 0.8], [0.2, 0.6]])
GT = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
FUNCTIONS = {"precision": F.precision, "recall": F.recall, "specificity": F.specificity, "fpr": F.fpr,
             "kappa": F.kappa, "f_measure": F.f_measure, "e_measure": F.e_measure, "iou_metric": F.iou_metric,
             "dice": F.dice, "accuracy": F.accuracy, "ber": F.ber}
BAD_OPTIONS = [
    ({"mode": "median"}, ValueError, "`mode`"),
    ({"mode": "max", "reduction": "pooled"}, ValueError, "`reduction`"),
    ({"mode": "adaptive", "reduction": "pooled"}, ValueError, "`reduction`"),
    ({"reduction": "sum"}, ValueError, "`reduction`"),
    ({"threshold": 2}, ValueError, "`threshold`"),
    ({"threshold": -0.1}, ValueError, "`threshold`"),
    ({"threshold": "0.5"}, TypeError, "`threshold`"),
    ({"num_thresholds": 1}, ValueError, "`num_thresholds`"),
    ({"num_thresholds": 2.5}, TypeError, "`num_thresholds`"),
    ({"normalize": 1}, TypeError, "`normalize`"),
    ({"empty_gt": "nan"}, ValueError, "`empty_gt`"),
]


@pytest.mark.parametrize(("options", "error", "match"), BAD_OPTIONS, ids=[str(o) for o, _, _ in BAD_OPTIONS])
def test_each_bad_option_raises_naming_the_argument(options, error, match):
    with pytest.raises(error, match=match):
        F.precision(PRED, GT, **options)
    with pytest.raises(error, match=match):
        nm.Precision(**options)


@pytest.mark.parametrize("function", FUNCTIONS.values(), ids=FUNCTIONS.keys())
def test_every_function_checks_every_option(function):
    for options, error, match in BAD_OPTIONS:
        with pytest.raises(error, match=match):
            function(PRED, GT, **options)


@pytest.mark.parametrize(("options", "error", "match"), [
    ({"chance": "x"}, ValueError, "`chance`"), ({"chance": "cohen "}, ValueError, "`chance`"),
])
def test_bad_kappa_chance_raises(options, error, match):
    with pytest.raises(error, match=match):
        F.kappa(PRED, GT, **options)
    with pytest.raises(error, match=match):
        nm.Kappa(**options)
    with pytest.raises(error, match=match):
        F.confusion_curves(PRED, GT, ("kappa",), **options)


@pytest.mark.parametrize(("options", "error", "match"), [
    ({"beta2": 0}, ValueError, "`beta2`"), ({"beta2": -1.0}, ValueError, "`beta2`"),
    ({"beta2": "1"}, TypeError, "`beta2`"),
])
def test_bad_beta2_raises(options, error, match):
    with pytest.raises(error, match=match):
        F.f_measure(PRED, GT, **options)
    with pytest.raises(error, match=match):
        nm.FMeasure(**options)


def test_bad_auc_and_curve_options_raise():
    with pytest.raises(ValueError, match="`num_thresholds`"):
        F.pr_auc(PRED, GT, num_thresholds=1)
    with pytest.raises(ValueError, match="`empty_gt`"):
        F.roc_auc(PRED, GT, empty_gt="zero")
    with pytest.raises(ValueError, match="`measure`"):
        F.confusion_curves(PRED, GT, ("precision", "auc"))
    with pytest.raises(TypeError):
        nm.PRAUC(mode="max")  # an AUC takes no mode
    with pytest.raises(TypeError):
        F.pr_auc(PRED, GT, mode="max")


CLASSES = {"Precision": nm.Precision, "Recall": nm.Recall, "Specificity": nm.Specificity, "FPR": nm.FPR,
           "Kappa": nm.Kappa, "F1": nm.F1, "FMeasure": nm.FMeasure, "EMeasure": nm.EMeasure, "IoU": nm.IoU,
           "Dice": nm.Dice, "Accuracy": nm.Accuracy, "BER": nm.BER}


@pytest.mark.parametrize("cls", CLASSES.values(), ids=CLASSES.keys())
def test_every_class_checks_every_option(cls):
    for options, error, match in BAD_OPTIONS:
        with pytest.raises(error, match=match):
            cls(**options)


def test_positional_arguments_and_defaults():
    assert nm.IoU(0.3).threshold == 0.3 and nm.IoU(0.3).mode == "binary"
    assert nm.Dice(0.7, mode="max").mode == "max" and nm.BER().mode == "binary" and nm.Accuracy().threshold == 0.5
    assert nm.FMeasure("adaptive").mode == "adaptive" and nm.FMeasure().mode == "max"
    assert nm.EMeasure().mode == "max" and nm.EMeasure("mean").mode == "mean"
    for cls in (nm.Precision, nm.Recall, nm.Specificity, nm.FPR, nm.Kappa, nm.F1):
        assert cls().mode == "binary", cls
        assert cls("max").mode == "max", cls
    assert nm.Kappa().chance == "cohen" and nm.Kappa(empty_gt="reference").chance == "reference"
    assert nm.Kappa(empty_gt="reference", chance="cohen").chance == "cohen"
    for cls, better in ((nm.FPR, False), (nm.BER, False), (nm.Precision, True), (nm.Kappa, True), (nm.PRAUC, True),
                        (nm.ROCAUC, True), (nm.F1, True), (nm.IoU, True)):
        assert cls.higher_is_better is better, cls


# ---------------------------------------------------------------------------------------------------- class


CLASS_CASES = [
    (nm.Precision, F.precision, {}), (nm.Recall, F.recall, {}), (nm.Specificity, F.specificity, {}),
    (nm.FPR, F.fpr, {}), (nm.Kappa, F.kappa, {}), (nm.Kappa, F.kappa, {"chance": "reference"}),
    (nm.F1, functools.partial(F.f_measure, beta2=1.0), {}), (nm.IoU, F.iou_metric, {}), (nm.Dice, F.dice, {}),
    (nm.Accuracy, F.accuracy, {}), (nm.BER, F.ber, {}), (nm.FMeasure, F.f_measure, {}),
    (nm.FMeasure, F.f_measure, {"beta2": 1.0}), (nm.EMeasure, F.e_measure, {}),
]
CLASS_MODES = [{"mode": "max"}, {"mode": "mean"}, {"mode": "curve"}, {"mode": "adaptive"}, {"mode": "binary"},
               {"mode": "binary", "reduction": "pooled"}, {"mode": "binary", "threshold": 0.3},
               {"mode": "curve", "num_thresholds": 17}]
OPTION_SETS = [{"normalize": True, "empty_gt": "reference"}, {}]


@pytest.mark.parametrize(("cls", "function", "extra"), CLASS_CASES,
                         ids=[f"{c.__name__}{e or ''}" for c, _, e in CLASS_CASES])
def test_functional_equals_class_after_one_update(cls, function, extra):
    for name in ("uint8", "float64"):
        data = dataset(name)
        preds, gts = data.preds[:10], data.gts[:10]  # blob, empty, full, thin gts; a 2-D and a 1xN shape
        for options in OPTION_SETS:
            for mode in CLASS_MODES:
                kwargs = {**extra, **mode, **options}
                if name == "float64" and kwargs.get("normalize"):
                    kwargs["normalize"] = False
                metric = cls(**kwargs)
                metric.update(preds, gts)
                value = function(preds, gts, **kwargs)
                assert torch.equal(metric.compute(), value), (cls.__name__, name, kwargs)


def test_auc_functional_equals_class_after_one_update():
    for name in ("uint8", "float64", "stress_uint8"):
        data = dataset(name)
        for options in ({"normalize": data.normalize, "empty_gt": "reference"}, {}, {"num_thresholds": 33}):
            for cls, function in ((nm.PRAUC, F.pr_auc), (nm.ROCAUC, F.roc_auc)):
                metric = cls(**options)
                metric.update(data.preds, data.gts)
                assert torch.equal(metric.compute(), function(data.preds, data.gts, **options)), (cls, name, options)
