"""The confusion family's measures: one value from TP, FP, TN, FN — every name typed once, here.

Reference: PySODMetrics 1.6.2 ``py_sod_metrics/fmeasurev2.py``, the handlers of ``FmeasureV2`` (each formula
is quoted beside its line), and ``Emeasure.cal_em_with_cumsumhistogram`` for the E-measure, whose
enhanced-alignment values are constant on each of the four confusion regions so that it too needs only
the counts. Every ratio is the reference's safe divide: ``0`` where the denominator is ``0``.

A measure maps :class:`Counts` of any shape (one image, a 256-point curve per image, pooled counts) to
float64 values of that shape. The degenerate-gt policy is applied by the caller
(:func:`nobg_metrics.functional.sod.confusion._per_image_values`), not here: these are the reference's values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import groupby
from typing import Literal, NamedTuple

import torch
from torch import Tensor

EPS = torch.finfo(torch.float64).eps
"""``np.spacing(1)``, the reference's epsilon."""

KappaChance = Literal["cohen", "reference"]
"""Chance agreement of kappa: Cohen's ``[(tp+fp)(tp+fn) + (tn+fn)(tn+fp)] / N²``, or PySODMetrics' (``KappaHandler``)
``[(tp+fp)(tp+fn) + (tn+fn)(tn+tp)] / N²`` — a known flaw of the reference, reproduced on request."""


class Counts(NamedTuple):
    """Confusion counts of one binarisation, int64 tensors of one shape (e.g. :math:`(B,)` or :math:`(B, T)`)."""

    tp: Tensor
    fp: Tensor
    tn: Tensor
    fn: Tensor

    @property
    def num_pixels(self) -> Tensor:
        """``tp + fp + tn + fn``: int64 of the counts' shape."""
        return self.tp + self.fp + self.tn + self.fn

    @property
    def degenerate(self) -> Tensor:
        """bool: the gt is all background (``tp + fn == 0``) or all foreground (``tn + fp == 0``)."""
        return ((self.tp + self.fn) == 0) | ((self.tn + self.fp) == 0)


@dataclass(frozen=True)
class MeasureOptions:
    """The options a measure reads: ``beta2`` (β² of the F-measure; PySODMetrics' ``beta``) and kappa's chance."""

    beta2: float = 0.3
    chance: KappaChance = "cohen"


def divide(numerator: Tensor, denominator: Tensor) -> Tensor:
    """The reference's ``_BaseHandler.divide``: ``numerator / denominator`` in float64, 0 where ``denominator == 0``.

    Examples:
        >>> divide(torch.tensor([1, 0]), torch.tensor([4, 0]))
        tensor([0.2500, 0.0000], dtype=torch.float64)
    """
    numerator, denominator = numerator.double(), denominator.double()
    return torch.where(denominator == 0, 0.0, numerator / denominator)  # 0/0 and x/0 are masked, never returned


RATIOS: dict[str, tuple[Callable[[Counts], Tensor], Callable[[Counts], Tensor]]] = {
    "precision": (lambda c: c.tp, lambda c: c.tp + c.fp),  # PrecisionHandler: tp / (tp + fp)
    "recall": (lambda c: c.tp, lambda c: c.tp + c.fn),  # RecallHandler (= TPR = sensitivity): tp / (tp + fn)
    "specificity": (lambda c: c.tn, lambda c: c.tn + c.fp),  # SpecificityHandler (= TNR): tn / (tn + fp)
    "fpr": (lambda c: c.fp, lambda c: c.tn + c.fp),  # FPRHandler: fp / (tn + fp)
    "iou": (lambda c: c.tp, lambda c: c.tp + c.fp + c.fn),  # IOUHandler: tp / (tp + fp + fn)
    "dice": (lambda c: 2 * c.tp, lambda c: c.tp + c.fn + c.tp + c.fp),  # DICEHandler: 2tp / (tp + fn + tp + fp)
    "accuracy": (lambda c: c.tp + c.tn, lambda c: c.tp + c.fp + c.tn + c.fn),  # OverallAccuracyHandler: (tp+tn)/N
}
"""The guarded ratios of counts the measures are made of: ``name -> (numerator, denominator)`` (int64)."""


class Ratios:
    """The counts of one binarisation and the guarded ratios the measures read, each computed once.

    :meth:`prefetch` divides every ratio a set of measures needs in one stacked :func:`divide` (elementwise the
    same operation, so the same bits as dividing each alone); precision and recall then serve F and F1,
    recall and specificity BER, the accuracy kappa and the degenerate-gt policy.

    Examples:
        >>> ratios = Ratios(Counts(*[torch.tensor([v]) for v in (3, 1, 4, 2)]))
        >>> ratios.ratio("precision").item(), ratios.ratio("recall").item()
        (0.75, 0.6)
    """

    def __init__(self, counts: Counts) -> None:
        self.counts = counts
        self._cache: dict[str, Tensor] = {}

    def prefetch(self, names: Iterable[str]) -> None:
        """Compute the :data:`RATIOS` ``names`` not computed yet, in one division."""
        missing = [name for name in dict.fromkeys(names) if name not in self._cache]
        if not missing:
            return
        c = self.counts
        if len(missing) == 1:
            numerator, denominator = RATIOS[missing[0]]
            self._cache[missing[0]] = divide(numerator(c), denominator(c))
            return
        numerators = torch.stack([RATIOS[name][0](c) for name in missing])
        denominators = torch.stack([RATIOS[name][1](c) for name in missing])
        self._cache.update(zip(missing, divide(numerators, denominators).unbind(0)))

    def ratio(self, name: str) -> Tensor:
        """The guarded ratio ``name`` of :data:`RATIOS` (float64, the counts' shape)."""
        if name not in self._cache:
            self.prefetch((name,))
        return self._cache[name]

    @property
    def accuracy(self) -> Tensor:
        return self.ratio("accuracy")


def _ratio_measure(name: str) -> Callable[[Ratios, MeasureOptions], Tensor]:
    def formula(r: Ratios, options: MeasureOptions) -> Tensor:
        return r.ratio(name)

    formula.__name__ = f"_{name}"
    return formula


def _ber(r: Ratios, options: MeasureOptions) -> Tensor:
    # BERHandler: 1 - 0.5 * (tp / (tp + fn) + tn / (tn + fp)), each ratio guarded
    return 1 - 0.5 * (r.ratio("recall") + r.ratio("specificity"))


def _f_of(r: Ratios, beta2: float) -> Tensor:
    # FmeasureHandler: (beta + 1) * p * r / (beta * p + r), beta = β², p and r guarded
    p, rec = r.ratio("precision"), r.ratio("recall")
    return divide((beta2 + 1) * p * rec, beta2 * p + rec)


def _f_measure(r: Ratios, options: MeasureOptions) -> Tensor:
    return _f_of(r, options.beta2)


def _f1(r: Ratios, options: MeasureOptions) -> Tensor:
    # FmeasureHandler(beta=1): F1 as a measure of its own, so that it shares one pass with F(β² = 0.3)
    return _f_of(r, 1.0)


def _kappa(r: Ratios, options: MeasureOptions) -> Tensor:
    # KappaHandler: (oa - pe) / (1 - pe); pe = [(tp+fp)(tp+fn) + (tn+fn)(tn+tp)] / N²  (Cohen: (tn+fn)(tn+fp))
    oa = r.accuracy
    # products of counts: exact in float64 below 2^53 (N < 9.4e7 pixels per count), no int64 overflow beyond
    tp, fp, tn, fn = (value.double() for value in r.counts)
    second = (tn + fn) * (tn + tp) if options.chance == "reference" else (tn + fn) * (tn + fp)
    chance = divide((tp + fp) * (tp + fn) + second, (tp + fp + tn + fn) ** 2)
    return divide(oa - chance, 1 - chance)


def _e_measure(r: Ratios, options: MeasureOptions) -> Tensor:
    # Emeasure.cal_em_with_cumsumhistogram: the four regions' enhanced alignment, summed, / (N - 1 + eps)
    c = r.counts
    num_pixels = c.num_pixels.double()
    positives, foreground = (c.tp + c.fp).double(), (c.tp + c.fn).double()
    mean_pred, mean_gt = positives / num_pixels, foreground / num_pixels
    pred_values, gt_values = (1 - mean_pred, 0 - mean_pred), (1 - mean_gt, 0 - mean_gt)
    # regions [fg_fg, fg_bg, bg_fg, bg_bg] = (TP, FP, FN, TN) with their (pred value, gt value), in the reference's
    # order
    parts = ((c.tp, 0, 0), (c.fp, 0, 1), (c.fn, 1, 0), (c.tn, 1, 1))
    total = torch.zeros_like(mean_pred)
    for count, pred_index, gt_index in parts:  # four regions: a bounded number of vectorised rounds
        a, b = pred_values[pred_index], gt_values[gt_index]
        align = 2 * (a * b) / (a**2 + b**2 + EPS)
        total = total + (align + 1) ** 2 / 4 * count.double()
    total = torch.where(foreground == 0, num_pixels - positives, total)  # all-background gt: #pred-bg
    total = torch.where(foreground == num_pixels, positives, total)  # all-foreground gt: #pred-fg
    return total / (num_pixels - 1 + EPS)


@dataclass(frozen=True)
class Measure:
    """One member of the family.

    Attributes:
        formula: :class:`Ratios` x :class:`MeasureOptions` -> float64 values.
        higher_is_better: orientation; a lower-is-better measure scores ``1 - agreement`` on a degenerate gt.
        reference: the PySODMetrics handler (or class) that defines it.
        reads: the :class:`MeasureOptions` fields the formula reads (they enter the state fingerprint).
        binary_reference: whether the reference has a binary (``pred > 0.5``) value of it.
        ratios: the :data:`RATIOS` its formula reads (prefetched together for a table of measures).
    """

    formula: Callable[[Ratios, MeasureOptions], Tensor]
    higher_is_better: bool
    reference: str
    reads: tuple[str, ...] = ()
    binary_reference: bool = True
    ratios: tuple[str, ...] = ()

    def __call__(self, counts: Counts | Ratios, options: MeasureOptions) -> Tensor:
        return self.formula(counts if isinstance(counts, Ratios) else Ratios(counts), options)


MEASURES: dict[str, Measure] = {
    "precision": Measure(_ratio_measure("precision"), True, "PrecisionHandler", ratios=("precision",)),
    "recall": Measure(_ratio_measure("recall"), True, "RecallHandler (TPRHandler, SensitivityHandler)",
                      ratios=("recall",)),
    "specificity": Measure(_ratio_measure("specificity"), True, "SpecificityHandler (TNRHandler)",
                           ratios=("specificity",)),
    "fpr": Measure(_ratio_measure("fpr"), False, "FPRHandler", ratios=("fpr",)),
    "iou": Measure(_ratio_measure("iou"), True, "IOUHandler", ratios=("iou",)),
    "dice": Measure(_ratio_measure("dice"), True, "DICEHandler", ratios=("dice",)),
    "accuracy": Measure(_ratio_measure("accuracy"), True, "OverallAccuracyHandler", ratios=("accuracy",)),
    "ber": Measure(_ber, False, "BERHandler", ratios=("recall", "specificity")),
    "kappa": Measure(_kappa, True, "KappaHandler", reads=("chance",), ratios=("accuracy",)),
    "f_measure": Measure(_f_measure, True, "FmeasureHandler (Fmeasure)", reads=("beta2",),
                         ratios=("precision", "recall")),
    "f1": Measure(_f1, True, "FmeasureHandler(beta=1)", ratios=("precision", "recall")),
    "e_measure": Measure(_e_measure, True, "Emeasure", binary_reference=False),
}
"""Every measure of the family by name; the names are the state names' and the collection's."""


def measure_values(name: str, counts: Counts | Ratios, options: MeasureOptions, agreement: bool) -> Tensor:
    """The values of measure ``name``, with the ``empty_gt="agreement"`` policy when ``agreement``.

    Under the policy an image whose gt is all background or all foreground scores the pixel agreement
    ``(tp + tn) / N`` (``1 -`` it for a lower-is-better measure: FPR, BER) instead of the reference's guarded
    ratio, so a perfect prediction scores perfectly and nothing divides 0 by 0.

    Examples:
        >>> empty_gt = Counts(*[torch.tensor([v]) for v in (0, 0, 9, 0)])  # a perfect prediction of an empty gt
        >>> measure_values("iou", empty_gt, MeasureOptions(), agreement=False).item()
        0.0
        >>> measure_values("iou", empty_gt, MeasureOptions(), agreement=True).item()
        1.0
    """
    return measure_table((name,), counts, options, agreement)[..., 0]


def measure_table(names: tuple[str, ...], counts: Counts | Ratios, options: MeasureOptions,
                  agreement: bool) -> Tensor:
    """Several measures of the same counts at once, stacked on a new last axis: :math:`(..., M)` float64.

    The ratios they share are computed once (:class:`Ratios`) and the degenerate-gt policy is one ``where``
    for all of them; each column has the bits :func:`measure_values` gives that measure alone.

    Examples:
        >>> counts = Counts(*[torch.tensor([v]) for v in (3, 1, 4, 2)])
        >>> measure_table(("precision", "recall"), counts, MeasureOptions(), agreement=True).tolist()
        [[0.75, 0.6]]
    """
    ratios = counts if isinstance(counts, Ratios) else Ratios(counts)
    ratios.prefetch(ratio for name in names for ratio in MEASURES[name].ratios + (("accuracy",) if agreement else ()))
    values = torch.stack([MEASURES[name](ratios, options) for name in names], dim=-1)
    if not agreement:
        return values
    agree = ratios.accuracy[..., None]  # pixel agreement (tp + tn) / N, the policy's value
    higher = [MEASURES[name].higher_is_better for name in names]
    # the fallback column by column, from runs of equal orientation (no host-made mask is sent to the device)
    fallback = torch.cat([(agree if up else 1 - agree).expand(*values.shape[:-1], len(list(run)))
                          for up, run in groupby(higher)], dim=-1)
    return torch.where(ratios.counts.degenerate[..., None], fallback, values)
