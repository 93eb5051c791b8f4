"""The size-invariant metrics equal PySODMetrics 1.6.2 ``SizeInvarianceMAE`` and ``SizeInvarianceFmeasureV2``.

Every handler of ``FmeasureV2`` (F with β² = 0.3 and 1, precision, recall, specificity, FPR, IoU, Dice, overall
accuracy, BER, kappa) runs in the real ``SizeInvarianceFmeasureV2`` with ``with_dynamic``, ``with_adaptive`` and
``with_binary``, ``sample_based`` True and False; its raw per-target curves are reduced as PySODMetrics' own test
does (``reduce_dynamic_results_for_max_avg``, ``reduce_dynamic_results_for_auc``, ``cal_auc``). Our values must
equal them to 1e-12 on data made for the targets rule (many objects of very different sizes, objects below and
above 50 px, only-small-object gts with ties of the largest area, touching and overlapping boxes, a ring around a
blob, boxes covering the image, 1xN, Nx1, non-square, tiny images, empty gts), on whole datasets and image by
image, on the CPU path and on the fixed-size (device) path forced on CPU.

Where the reference fails (an all-foreground gt: assertion; boxes covering the image: NaN SI-MAE; more than 64
targets: ``OverflowError``; boxes beyond bit 52 of its float64 map: silently wrong) our defined values are checked
against their definitions, and against the reference's own code with its bit map held exactly (Python ints).
"""

from __future__ import annotations

import contextlib
import functools
import warnings

import numpy as np
import py_sod_metrics as psm
import py_sod_metrics.size_invariance as psi
import pytest
import torch

from nobg_metrics import functional as F
from nobg_metrics.functional.sod import size_invariance as S
from nobg_metrics.functional.sod.si_family import SI_MEASURES
from nobg_metrics.ops import host_reads
from tests.helpers.data import pred_uint8

ATOL = 1e-12
WORST: dict[str, float] = {}
"""The largest |ours - PySODMetrics| per kind of value (printed at the end of the module)."""

HANDLERS = {  # reference handler name -> (class, kwargs, our measure)
    "fm": (psm.FmeasureHandler, {"beta": 0.3}, "f_measure"), "f1": (psm.FmeasureHandler, {"beta": 1}, "f1"),
    "pre": (psm.PrecisionHandler, {}, "precision"), "rec": (psm.RecallHandler, {}, "recall"),
    "spec": (psm.SpecificityHandler, {}, "specificity"), "fpr": (psm.FPRHandler, {}, "fpr"),
    "iou": (psm.IOUHandler, {}, "iou"), "dice": (psm.DICEHandler, {}, "dice"),
    "oa": (psm.OverallAccuracyHandler, {}, "accuracy"), "ber": (psm.BERHandler, {}, "ber"),
    "kappa": (psm.KappaHandler, {}, "kappa"),
}
SHAPES = [(37, 53), (64, 48), (1, 17), (17, 1), (5, 5), (2, 3), (96, 96), (33, 70), (120, 150)]


# ---------------------------------------------------------------------------------------------------- data


def _ellipse(mask: np.ndarray, cy: float, cx: float, ry: float, rx: float) -> None:
    yy, xx = np.ogrid[0:mask.shape[0], 0:mask.shape[1]]
    mask |= ((yy - cy) / max(ry, 0.5)) ** 2 + ((xx - cx) / max(rx, 0.5)) ** 2 <= 1


def target_gt(rng: np.random.Generator, h: int, w: int, kind: str) -> np.ndarray:
    """A bool gt made for the targets rule (kinds: many, small, nested, overlap, cover, empty)."""
    m = np.zeros((h, w), bool)
    if kind == "many":  # objects of very different sizes, above and below 50 px
        for _ in range(rng.integers(8, 24)):
            r = float(np.exp(rng.uniform(np.log(0.8), np.log(max(1.0, min(h, w) / 5)))))
            _ellipse(m, rng.uniform(0, h), rng.uniform(0, w), r * rng.uniform(0.5, 1.5), r * rng.uniform(0.5, 1.5))
    elif kind == "small":  # only objects below 50 px; several may share the largest area
        for _ in range(rng.integers(2, 7)):
            s = int(rng.choice([2, 3, 3, 4, 5]))
            y, x = rng.integers(0, max(1, h - s)), rng.integers(0, max(1, w - s))
            m[y:y + s, x:x + s] = True
    elif kind == "nested":  # a ring around a blob: the blob's box inside the ring's
        r = min(h, w) / 2 - 1
        _ellipse(m, h / 2, w / 2, r, r)
        hole = np.zeros_like(m)
        _ellipse(hole, h / 2, w / 2, r * 0.75, r * 0.75)
        m &= ~hole
        _ellipse(m, h / 2, w / 2, r * 0.4, r * 0.4)
    elif kind == "overlap":  # L shapes with overlapping boxes, two squares touching at a corner only
        for _ in range(rng.integers(2, 6)):
            y, x = rng.integers(0, max(1, h - 10)), rng.integers(0, max(1, w - 10))
            a, b = rng.integers(8, 30), rng.integers(8, 30)
            m[y:y + a, x:x + 3] = True
            m[y + a - 3:y + a, x:x + b] = True
        y, x = rng.integers(0, max(1, h - 16)), rng.integers(0, max(1, w - 16))
        m[y:y + 8, x:x + 8] = True
        m[y + 8:y + 16, x + 8:x + 16] = True
    elif kind == "crowd":  # a grid of objects from 1 px to ~10x the area threshold, some below 50 px
        for y in range(1, h - 2, 14):
            for x in range(1, w - 2, 14):
                s = int(rng.integers(1, 13))
                m[y:y + s, x:x + int(rng.integers(1, 13))] = True
    elif kind == "cover":  # two components whose boxes cover the whole image
        m[0, :] = m[:, 0] = True
        m[-1, 2:] = m[2:, -1] = True
    return m


KINDS = ("many", "small", "nested", "overlap", "cover", "empty", "crowd")
DEVICE_SHAPES = [(37, 53), (1, 17), (17, 1), (5, 5), (2, 3), (33, 70)]
"""The fixed-size path forced on CPU counts 512 planes per image: a smaller sweep keeps the test fast."""
PRED_KINDS = ("noisy", "lowrange", "constant", "random", "perfect")


def si_pairs(seed: int = 0, shapes=SHAPES) -> list[tuple[np.ndarray, np.ndarray]]:
    """uint8 (pred, gt) pairs over ``shapes`` x :data:`KINDS` (grey 127/128/129 gt edges); no all-foreground gt."""
    rng = np.random.default_rng(seed)
    pairs = []
    for index, (h, w) in enumerate(shapes):
        for k, kind in enumerate(KINDS):
            mask = target_gt(rng, h, w, kind)
            if mask.all():
                continue
            gt = np.where(mask, 255, 0).astype(np.uint8)
            edge = mask & ~np.roll(mask, 1, axis=1)
            gt[edge] = rng.choice(np.array([129, 200, 255], np.uint8), size=int(edge.sum()))  # still foreground
            gt[~mask & np.roll(mask, 1, axis=1)] = rng.choice(np.array([127, 128], np.uint8))
            pairs.append((pred_uint8(rng, gt, PRED_KINDS[(index + k) % len(PRED_KINDS)]), gt))
    return pairs


def si_float_pairs(seed: int = 1, shapes=SHAPES) -> list[tuple[np.ndarray, np.ndarray]]:
    """float64 predictions in [0, 1] with bool gts (``normalize=False``)."""
    rng = np.random.default_rng(seed)
    return [(np.clip(p / 255 + rng.uniform(0, 1 / 255, p.shape), 0, 1), g > 128) for p, g in si_pairs(seed, shapes)]


def tensors(pairs) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    return ([torch.from_numpy(np.ascontiguousarray(p)) for p, _ in pairs],
            [torch.from_numpy(np.ascontiguousarray(g)) for _, g in pairs])


# ---------------------------------------------------------------------------------------------------- reference


def _auc(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """PySODMetrics' test ``cal_auc`` (stable argsort by x, ``np.trapz``) after flipping to ascending thresholds."""
    y, x = np.flip(y, -1), np.flip(x, -1)
    order = np.argsort(x, axis=-1, kind="stable")
    y, x = np.take_along_axis(y, order, -1), np.take_along_axis(x, order, -1)
    return ((x[..., 1:] - x[..., :-1]) * (y[..., 1:] + y[..., :-1]) / 2.0).sum(-1)


def reference_values(pairs, normalize: bool) -> dict[str, float | np.ndarray]:
    """Every SI value by our name (:data:`S.SI_ENTRIES`, ``si_mae``, and the curves ``si_<m>_curve[_overall]``)."""
    handlers = {}
    for key, (cls, kwargs, _) in HANDLERS.items():
        handlers[f"s_{key}"] = cls(with_dynamic=True, with_adaptive=True, with_binary=True, sample_based=True, **kwargs)
        handlers[f"o_{key}"] = cls(with_dynamic=True, with_adaptive=False, with_binary=True, sample_based=False,
                                   **kwargs)
    family, mae = psm.SizeInvarianceFmeasureV2(metric_handlers=handlers), psm.SizeInvarianceMAE()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the NaN of boxes covering the image
        for pred, gt in pairs:
            family.step(pred, gt, normalize=normalize)
            mae.step(pred, gt, normalize=normalize)
    res = family.get_results()
    out: dict[str, float | np.ndarray] = {"si_mae": float(mae.get_results()["si_mae"])}
    for key, (_, _, m) in HANDLERS.items():
        sample, overall = res[f"s_{key}"], res[f"o_{key}"]
        out[f"si_{m}_max"] = np.mean([s.max(-1).mean() for s in sample["dynamic"]])
        out[f"si_{m}_mean"] = np.mean([s.mean(-1).mean() for s in sample["dynamic"]])
        out[f"si_{m}_curve"] = np.mean([s.mean(0) for s in sample["dynamic"]], axis=0)
        out[f"si_{m}_adaptive"] = sample["adaptive"]
        out[f"si_{m}_binary"] = sample["binary"]
        out[f"si_{m}_max_overall"] = overall["dynamic"].max()
        out[f"si_{m}_mean_overall"] = overall["dynamic"].mean()
        out[f"si_{m}_curve_overall"] = overall["dynamic"]
        out[f"si_{m}_pooled"] = overall["binary"]
    dyn = {key: res[f"s_{key}"]["dynamic"] for key in ("pre", "rec", "fpr")}
    out["si_pr_auc"] = np.mean([_auc(y, x).mean() for y, x in zip(dyn["pre"], dyn["rec"])])
    out["si_roc_auc"] = np.mean([_auc(y, x).mean() for y, x in zip(dyn["rec"], dyn["fpr"])])
    mean_curve = {key: res[f"o_{key}"]["dynamic"] for key in ("pre", "rec", "fpr")}
    out["si_pr_auc_overall"] = _auc(mean_curve["pre"], mean_curve["rec"])
    out["si_roc_auc_overall"] = _auc(mean_curve["rec"], mean_curve["fpr"])
    return out


def our_values(preds, gts, normalize: bool, curves: bool = True, **options) -> dict[str, torch.Tensor]:
    """Our value of every name :func:`reference_values` returns (one pass for the scalars)."""
    out = dict(S.size_invariant_values(preds, gts, normalize=normalize, empty_gt="reference", **options))
    out["si_mae"] = F.si_mae(preds, gts, normalize=normalize, **options)
    if curves:
        for sample_based, suffix in ((True, "curve"), (False, "curve_overall")):
            curves = F.size_invariant_curves(preds, gts, SI_MEASURES, sample_based=sample_based, normalize=normalize,
                                             empty_gt="reference", **options)
            out.update({f"si_{m}_{suffix}": curves[m] for m in SI_MEASURES})
    return out


def kind_of(name: str) -> str:
    for kind in ("curve_overall", "curve", "max_overall", "mean_overall", "pooled", "auc_overall", "auc", "max",
                 "mean", "adaptive", "binary", "mae"):
        if name.endswith(kind):
            return kind
    raise AssertionError(name)


def compare(ours: dict[str, torch.Tensor], expected: dict, where: str) -> None:
    assert set(ours) == set(expected) or set(ours) <= set(expected), sorted(set(expected) ^ set(ours))
    for name, value in ours.items():
        reference = np.asarray(expected[name], dtype=np.float64)
        if np.isnan(reference).any():  # only where the reference is finite (its NaN: boxes covering the image)
            continue
        diff = float(np.abs(value.double().cpu().numpy() - reference).max())
        WORST[kind_of(name)] = max(WORST.get(kind_of(name), 0.0), diff)
        assert diff <= ATOL, f"{where} {name}: {value} vs {reference} (|diff| = {diff:.3g})"


@functools.cache
def data(name: str):
    shapes = DEVICE_SHAPES if name.endswith("small") else SHAPES
    pairs = si_pairs(0, shapes) if name.startswith("uint8") else si_float_pairs(1, shapes)
    return pairs, tensors(pairs), name.startswith("uint8")


@functools.cache
def reference(name: str):
    pairs, _, normalize = data(name)
    return reference_values(pairs, normalize), [reference_values([pair], normalize) for pair in pairs]


@pytest.fixture(scope="module", autouse=True)
def _module_setup():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small images: thread start-up dominates, and the machine is shared
    yield
    torch.set_num_threads(threads)
    print("\nworst |ours - PySODMetrics| per kind:", {kind: f"{value:.3g}" for kind, value in sorted(WORST.items())})


@pytest.fixture(params=["cpu", pytest.param("device", marks=pytest.mark.slow)])
def path(request, monkeypatch):
    """The CPU path, or the fixed-size path CUDA runs (``host_reads.free_on`` forced False)."""
    if request.param == "device":
        monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    return request.param


# ---------------------------------------------------------------------------------------------------- parity


@pytest.mark.parametrize("name", ["uint8", "float64"])
def test_dataset_values_equal_the_reference(name, path):
    name = name if path == "cpu" else f"{name}_small"
    _, (preds, gts), normalize = data(name)
    compare(our_values(preds, gts, normalize), reference(name)[0], f"{name} {path} dataset")


@pytest.mark.parametrize("name", ["uint8", "float64"])
def test_values_of_each_image_equal_the_reference(name):
    _, (preds, gts), normalize = data(name)
    for index, expected in enumerate(reference(name)[1]):
        compare(our_values(preds[index], gts[index], normalize, curves=index % 5 == 0), expected, f"{name}[{index}]")


def test_the_data_exercises_the_targets_rule():
    """Many targets, only-small gts with tied largest areas, nested and overlapping boxes, boxes covering the image."""
    counts, tied, nested, overlapping, covering = [], 0, 0, 0, 0
    for _, gt in data("uint8")[0]:
        n, labels = psi.parse_connected_components(gt > 128)
        counts.append(n)
        boxes = [(r.min(), r.max(), c.min(), c.max()) for r, c in (np.where(labels == k) for k in range(1, n + 1))]
        small = measure_areas(gt > 128)
        tied += bool(small and max(small) < 50 and small.count(max(small)) > 1)
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                inter = not (a[1] < b[0] or b[1] < a[0] or a[3] < b[2] or b[3] < a[2])
                overlapping += inter
                nested += a[0] <= b[0] and a[1] >= b[1] and a[2] <= b[2] and a[3] >= b[3]
        mask = np.zeros(gt.shape, bool)
        for y0, y1, x0, x1 in boxes:
            mask[y0:y1 + 1, x0:x1 + 1] = True
        covering += bool(n and mask.all())
    assert max(counts) >= 8 and counts.count(0) >= 3
    assert tied >= 1 and nested >= 3 and overlapping >= 5 and covering >= 3


def measure_areas(mask: np.ndarray) -> list[int]:
    from skimage import measure

    return [int(p.area) for p in measure.regionprops(measure.label(mask, connectivity=1))]


def _ties(pred: np.ndarray, gt: np.ndarray, normalize: bool) -> int:
    """Targets whose adaptive threshold ``2 · mean(pred · box)`` lies within 1e-12 of one of their pixel values."""
    pred, mask = psm.utils.prepare_data(pred, gt) if normalize else (pred, gt)
    n, labels = psi.parse_connected_components(mask)
    ties = 0
    for k in range(1, n + 1):
        rows, cols = np.where(labels == k)
        box = np.zeros(mask.shape, bool)
        box[rows.min():rows.max() + 1, cols.min():cols.max() + 1] = True
        masked = pred * box
        ties += bool(np.any(np.abs(masked[box] - 2 * masked.mean()) <= 1e-12))
    return ties


@pytest.mark.parametrize("name", ["uint8", "float64"])
def test_adaptive_ties_are_decided_as_numpy_rounds_the_masked_mean(name, path):
    """Tiny images where ``2 · mean(pred · box)`` equals a pixel value in exact arithmetic (found by search): the
    last bit of numpy's pairwise mean decides the binarisation; both paths must agree with the reference."""
    rng = np.random.default_rng(5)
    levels = np.array([0, 17, 34, 51, 85, 102, 170, 255], np.uint8)
    pairs = []
    while len(pairs) < 16:
        h, w = int(rng.integers(1, 5)), int(rng.integers(2, 9))
        gt = np.where(rng.random((h, w)) < 0.5, 255, 0).astype(np.uint8)
        pred = rng.choice(levels, size=(h, w))
        pair = (pred, gt) if name == "uint8" else (pred / 255, gt > 128)
        if not (gt > 128).all() and _ties(*pair, normalize=name == "uint8"):
            pairs.append(pair)
    preds, gts = tensors(pairs)
    expected = reference_values(pairs, normalize=name == "uint8")
    ours = S.size_invariant_values(preds, gts, [n for n in S.SI_ENTRIES if n.endswith("adaptive")],
                                   normalize=name == "uint8", empty_gt="reference")
    compare(ours, expected, f"{name} ties {path}")


# ---------------------------------------------------------------------------------------- the reference's failures


@contextlib.contextmanager
def exact_bits():
    """The reference's own code with its box map held as Python ints (an object array): exact for any count."""

    def encode(max_index, labels):
        weights = np.zeros(labels.shape, dtype=object)
        for label in range(1, max_index + 1):
            rows, cols = np.where(labels == label)
            weights[rows.min():rows.max() + 1, cols.min():cols.max() + 1] += 1 << (label - 1)
        return weights

    def kth_bit(n, k):
        return ((n & (1 << (k - 1))) >> (k - 1)).astype(np.int64)

    saved = psi.encode_bboxwise_tgts_bitwise, psi.get_kth_bit
    psi.encode_bboxwise_tgts_bitwise, psi.get_kth_bit = encode, kth_bit
    try:
        yield
    finally:
        psi.encode_bboxwise_tgts_bitwise, psi.get_kth_bit = saved


def _squares(rows: int, columns: int, frame: bool) -> np.ndarray:
    """A grid of 6x9 squares (54 px: targets), optionally inside a 1-px frame that is the first label."""
    gt = np.zeros((4 + 8 * rows, 4 + 11 * columns), np.uint8)
    if frame:
        gt[1, 1:-1] = gt[-2, 1:-1] = gt[1:-1, 1] = gt[1:-1, -2] = 255
    for i in range(rows):
        for j in range(columns):
            gt[3 + 8 * i:9 + 8 * i, 3 + 11 * j:12 + 11 * j] = 255
    return gt


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")  # the reference's own overflow
@pytest.mark.parametrize("case", ["64+ targets", "bit 53+ overlaps"])
def test_past_the_reference_bit_map_we_equal_its_exact_port(case, path):
    rng = np.random.default_rng(3)
    gt = _squares(7, 10, frame=False) if case == "64+ targets" else _squares(5, 11, frame=True)
    pred = pred_uint8(rng, gt)
    n, _ = psi.parse_connected_components(gt > 128)
    assert n == (70 if case == "64+ targets" else 56)
    with exact_bits():
        expected = reference_values([(pred, gt)], normalize=True)
    ours = our_values(torch.from_numpy(pred), torch.from_numpy(gt), True, curves=False)
    compare(ours, expected, f"{case} {path}")
    if case == "64+ targets":
        with pytest.raises(OverflowError):
            psm.SizeInvarianceMAE().step(pred, gt)
    else:  # the frame loses its bit where a later box overlaps it: silently wrong
        assert abs(reference_values([(pred, gt)], normalize=True)["si_mae"] - expected["si_mae"]) > 1e-6


def test_an_all_foreground_gt_is_one_target_the_whole_image():
    """The reference asserts; our single target is the whole image: SI-MAE is MAE, the family is the family on
    the image (with its ``empty_gt`` policy for the degenerate counts)."""
    rng = np.random.default_rng(4)
    gt = np.full((9, 14), 255, np.uint8)
    pred = rng.integers(0, 256, gt.shape).astype(np.uint8)
    with pytest.raises(AssertionError):
        psm.SizeInvarianceMAE().step(pred, gt)
    p, g = torch.from_numpy(pred), torch.from_numpy(gt)
    assert torch.equal(F.si_mae(p, g, normalize=True), F.mae(p, g, normalize=True))
    for empty_gt in ("reference", "agreement"):
        for measure, mode in (("precision", "max"), ("specificity", "mean"), ("iou", "adaptive"), ("ber", "binary")):
            plain = getattr(F, {"precision": "precision", "specificity": "specificity", "iou": "iou_metric",
                                "ber": "ber"}[measure])
            expected = plain(p, g, mode=mode, normalize=True, empty_gt=empty_gt)
            value = F.size_invariant(measure, p, g, mode, normalize=True, empty_gt=empty_gt)
            assert torch.allclose(value, expected, rtol=0, atol=1e-15), (measure, mode, empty_gt)


def test_boxes_covering_the_image_drop_the_background_term():
    """The reference divides 0 by 0 (NaN); we take the limit r -> 0: the mean of the boxes' MAE."""
    rng = np.random.default_rng(6)
    gt = np.zeros((30, 40), np.uint8)  # two L-shaped targets of 69 and 65 px
    gt[0, :] = gt[:, 0] = 255
    gt[-1, 2:] = gt[2:, -1] = 255
    pred = rng.integers(0, 256, gt.shape).astype(np.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = psm.SizeInvarianceMAE()
        reference.step(pred, gt)
    assert np.isnan(reference.get_results()["si_mae"])
    value = pred / 255
    error = np.abs((value - value.min()) / (value.max() - value.min()) - (gt > 128))
    expected = (error.mean() + error[2:, 2:].mean()) / 2  # the boxes: the whole image, and rows/columns 2..end
    assert abs(F.si_mae(torch.from_numpy(pred), torch.from_numpy(gt), normalize=True).item() - expected) <= 1e-15


def test_an_empty_gt_scores_the_whole_image_by_the_policy():
    rng = np.random.default_rng(7)
    pred = torch.from_numpy(rng.integers(0, 256, (7, 9)).astype(np.uint8))
    gt = torch.zeros(7, 9, dtype=torch.uint8)
    assert torch.equal(F.si_mae(pred, gt, normalize=True), F.mae(pred, gt, normalize=True))
    for empty_gt in ("reference", "agreement"):
        for mode in ("max", "mean", "adaptive", "binary"):
            expected = F.recall(pred, gt, mode, normalize=True, empty_gt=empty_gt)
            assert torch.equal(F.size_invariant("recall", pred, gt, mode, normalize=True, empty_gt=empty_gt),
                               expected)
    assert F.size_invariant("recall", pred, gt, "binary", empty_gt="agreement") > 0  # agreement, not 0/0


def test_the_device_path_refuses_images_with_more_targets_than_max_targets(monkeypatch):
    gt = _squares(1, 3, frame=False)
    pred = torch.from_numpy(gt // 2)
    gt = torch.from_numpy(gt)
    cpu = F.si_mae(pred, gt, max_targets=2)  # no bound on CPU
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    with pytest.raises(ValueError, match="`max_targets`=2"):
        F.si_mae(pred, gt, max_targets=2)
    with pytest.raises(ValueError, match="`max_targets`=2"):
        F.size_invariant("iou", pred, gt, "binary", max_targets=2)
    assert torch.equal(F.si_mae(pred, gt, max_targets=3), cpu)


@pytest.mark.parametrize("name", ["uint8", "float64"])
def test_other_thresholds_agree_across_paths(name, monkeypatch):
    """``num_thresholds`` other than 256 and another binary threshold: the fixed-size path gives the CPU values."""
    _, (preds, gts), normalize = data(f"{name}_small")
    options = {"num_thresholds": 37, "threshold": 0.3, "normalize": normalize, "empty_gt": "agreement"}
    names = ["si_f_measure_max", "si_iou_mean_overall", "si_dice_binary", "si_kappa_pooled", "si_roc_auc",
             "si_precision_adaptive"]
    cpu = F.size_invariant_values(preds, gts, names, **options)
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    device = F.size_invariant_values(preds, gts, names, **options)
    for key in names:
        assert abs(cpu[key].item() - device[key].item()) <= ATOL, key


def test_options_are_checked():
    pred, gt = torch.rand(8, 8), torch.rand(8, 8) > 0.5
    with pytest.raises(ValueError, match="adaptive mode is per sample"):
        F.size_invariant("iou", pred, gt, "adaptive", sample_based=False)
    with pytest.raises(ValueError, match="`measure`"):
        F.size_invariant("e_measure", pred, gt)
    with pytest.raises(ValueError, match="`max_targets`"):
        F.si_mae(pred, gt, max_targets=0)
    with pytest.raises(TypeError, match="`sample_based`"):
        F.size_invariant("iou", pred, gt, sample_based=1)
    with pytest.raises(ValueError, match="`names`"):
        F.size_invariant_values(pred, gt, ["si_e_measure_max"])
