"""Panoptic quality as a ``Metric``: the state of :func:`nobg_metrics.functional.panoptic_quality` and
:func:`nobg_metrics.functional.modified_panoptic_quality`; drop-ins for torchmetrics' ``PanopticQuality`` and
``ModifiedPanopticQuality`` (same positional arguments, same tensor output).

States (fixed size, one entry per category, int64, summed over batches and DDP ranks):
``iou_sum_high`` / ``iou_sum_low`` (the exact limbs of the matched IoUs' sum, see
:mod:`nobg_metrics.functional.panoptic.segments`), ``true_positives``, ``false_positives``,
``false_negatives``, and the fingerprint of the options. Integer states make any split over batches and
ranks give bit-identical values.
"""


import warnings
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from nobg_metrics.functional.panoptic.inputs import Categories, PanopticMaps
from nobg_metrics.functional.panoptic.outputs import PanopticOutput, shaped
from nobg_metrics.functional.panoptic.panoptic_quality import (
    PanopticIouType,
    PanopticRules,
    _check_panoptic_args,
    _panoptic_compute,
    _panoptic_update,
)
from nobg_metrics.functional.panoptic.segments import STAT_NAMES
from nobg_metrics.metrics.base import NobgMetric
from nobg_metrics.ops.host_reads import Engine

__all__ = ["ModifiedPanopticQuality", "PanopticQuality"]

_INPUTS_AND_ARGS = """
    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``preds`` (:class:`~torch.Tensor`): :math:`(B, *spatial, 2)` integer ``(category_id, instance_id)`` per point
      (images :math:`(B, H, W, 2)`, point clouds :math:`(B, N, 2)`, volumes), or a list of :math:`(*spatial, 2)`
      tensors of any sizes.
    - ``target`` (:class:`~torch.Tensor`): the same layout; points of categories that are neither things nor stuffs
      are void.
    - ``iscrowd`` (:class:`~torch.Tensor`, optional): :math:`(B, *spatial)` bool marks of the crowd gt segments'
      points (or a list).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``quality`` (:class:`~torch.Tensor`, ``output="tensor"``, the default): float64, torchmetrics' layout."""


class _PanopticMetric(NobgMetric):
    """The states, update and compute shared by :class:`PanopticQuality` and :class:`ModifiedPanopticQuality`."""

    iou_sum_high: Tensor
    iou_sum_low: Tensor
    true_positives: Tensor
    false_positives: Tensor
    false_negatives: Tensor
    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    _modified = False

    def _setup(self, things: Collection[int], stuffs: Collection[int], allow_unknown_preds_category: bool,
               return_sq_and_rq: bool, return_per_class: bool, iou_type: PanopticIouType, dilation_ratio: float,
               output: PanopticOutput, rules: PanopticRules, category_order: Sequence[int] | None,
               engine: Engine) -> None:
        _check_panoptic_args(iou_type, dilation_ratio, output, return_sq_and_rq, return_per_class,
                             allow_unknown_preds_category, engine, rules)
        self.engine, self.rules = engine, rules
        self.categories = Categories.from_sets(things, stuffs, category_order)
        self.things, self.stuffs = set(things), set(stuffs)
        self.iou_type, self.dilation_ratio = iou_type, dilation_ratio
        self.allow_unknown_preds_category = allow_unknown_preds_category
        self.output, self.return_sq_and_rq, self.return_per_class = output, return_sq_and_rq, return_per_class
        self._add_fingerprint({"categories": self.categories.ids, "isthing": self.categories.isthing,
                               "iou_type": iou_type, "dilation_ratio": float(dilation_ratio),
                               "allow_unknown_preds_category": allow_unknown_preds_category, "rules": rules,
                               "modified": self._modified})
        for name in STAT_NAMES:  # iou_sum_high, iou_sum_low, true_positives, false_positives, false_negatives
            self._add_count(name, (len(self.categories.ids),))

    def _statistics(self, preds: PanopticMaps, target: PanopticMaps, iscrowd: PanopticMaps | None = None
                    ) -> dict[str, Tensor]:
        """The batch's per-category sums (``{state name: (C,) int64}``); raises on bad input before any state moves."""
        return _panoptic_update(preds, target, iscrowd, self.categories, self.iou_type, self.dilation_ratio,
                                self.allow_unknown_preds_category, self.validate_args, self.engine, self.rules,
                                self._modified)

    def _value(self, states: Mapping[str, Tensor]) -> Tensor | dict[str, Any]:
        """The dataset values of ``states`` in the layout of ``output`` (class notes)."""
        device = states["true_positives"].device
        values = _panoptic_compute(states["iou_sum_high"], states["iou_sum_low"], states["true_positives"],
                                   states["false_positives"], states["false_negatives"],
                                   self.categories.thing_mask(device),
                                   torch.tensor(self.categories.ids, dtype=torch.int64, device=device),
                                   empty=float("nan") if self.rules == "torchmetrics" else 0.0)
        return shaped(values, self.output, self.return_sq_and_rq, self.return_per_class)

    def update(self, preds: PanopticMaps, target: PanopticMaps, iscrowd: PanopticMaps | None = None) -> None:
        """Add a batch (shapes in the class notes)."""
        self._accumulate(self._batch_statistics(preds, target, iscrowd))

    @torch.jit.unused
    def forward(self, *inputs: Any, **named: Any) -> Any:
        """``update`` with the batch and return the batch's own value (unused by TorchScript, as torchmetrics'
        ``forward``: ``torch.jit.script(metric)`` works)."""
        return super().forward(*inputs, **named)


def _legacy_positional(allow_unknown: Any, third: Any, named: dict[str, Any]) -> tuple[Any, Any]:
    """The former positional order ``(things, stuffs, iou_type, dilation_ratio)``: a string third argument is
    ``iou_type`` (and a number fourth ``dilation_ratio``), with a ``FutureWarning``; returns the flags
    ``(allow_unknown_preds_category, return_sq_and_rq)`` (``False`` for the former positional values)."""
    if not isinstance(allow_unknown, str):
        return allow_unknown, third
    warnings.warn("PanopticQuality(things, stuffs, iou_type, dilation_ratio) is the former positional order; the "
                  "third and fourth are now torchmetrics' allow_unknown_preds_category and return_sq_and_rq: pass "
                  "iou_type= and dilation_ratio= by name", FutureWarning, stacklevel=3)
    named["iou_type"] = allow_unknown
    if not isinstance(third, bool):
        named["dilation_ratio"] = third
        third = False
    return False, third


class PanopticQuality(_PanopticMetric):
    __doc__ = """PQ or Boundary PQ; torchmetrics' ``PanopticQuality`` with the same arguments and output, plus crowd
    segments, Boundary PQ, panopticapi's rules and its result layout as options.
    """ + _INPUTS_AND_ARGS + """ Scalar PQ; ``[pq, sq, rq]`` :math:`(3,)` with
      ``return_sq_and_rq``; :math:`(1, C)` per-class PQ with ``return_per_class``; :math:`(C, 3)` per-class
      ``[pq, sq, rq]`` with both. A mean over no class is NaN (``rules="torchmetrics"``).
    - ``pq_dict`` (:class:`dict`, ``output="dict"``): float64 tensors by name:

        - ``pq``, ``sq``, ``rq``: scalar, the means over the classes that occur (in a prediction or a gt).
        - ``n``: scalar int64, the number of those classes.
        - ``pq_things``, ``sq_things``, ``rq_things``, ``n_things``: the same over the things.
        - ``pq_stuff``, ``sq_stuff``, ``rq_stuff``, ``n_stuff``: the same over the stuffs.
        - ``pq_per_class``, ``sq_per_class``, ``rq_per_class``: :math:`(C,)`, 0 for a class that does not occur.
        - ``classes``: :math:`(C,)` int64, the category ids in that order (``category_order``; by default things
          sorted, then stuffs sorted).

    - ``results`` (:class:`dict`, ``output="panopticapi"``): panopticapi ``pq_compute``'s nested dict of Python
      numbers (``All`` / ``Things`` / ``Stuff`` / ``per_class``).

    Args:
        things: category ids of the things.
        stuffs: category ids of the stuffs (their instance ids are ignored).
        allow_unknown_preds_category: read prediction points of unknown categories as void (else an error).
        return_sq_and_rq: with ``output="tensor"``: ``[pq, sq, rq]``.
        return_per_class: with ``output="tensor"``: per-class values.
        iou_type: ``"segm"`` (mask IoU) or ``"boundary"`` (``min(mask IoU, boundary IoU)``; 2-D images only).
        dilation_ratio: band width as a fraction of the image diagonal (0.02 COCO, 0.005 Cityscapes).
        output: ``"tensor"`` (torchmetrics' layout), ``"dict"`` (every value) or ``"panopticapi"``.
        rules: ``"torchmetrics"`` (default) or ``"panopticapi"`` (``pq_compute``'s void rules, a mean over no
            class 0.0); see :mod:`nobg_metrics.functional.panoptic.panoptic_quality`.
        category_order: every category id of ``things`` and ``stuffs`` once, in the order of the per-class values
            and states (e.g. a dataset's own order); default: the things sorted, then the stuffs sorted
            (torchmetrics' order).
        validate_args: run the checks that read the data back (unknown categories, instance ids, crowd marks).
        engine: ``"auto"`` (data-sized tables on CPU, sync-free elsewhere), ``"data_sized"`` (host reads size the
            tables) or ``"fixed"`` (no host read: what a GPU runs by default); the values are the same.

    The former positional order ``(things, stuffs, iou_type, dilation_ratio)`` still works, with a
    ``FutureWarning`` (not with ``allow_unknown_preds_category=`` also given by name: it is the third argument now).

    Examples:
        >>> import torch
        >>> target = torch.zeros(1, 4, 6, 2, dtype=torch.long)
        >>> target[0, :, :3, 0] = 1                     # a thing of category 1 on the left, stuff 7 elsewhere
        >>> target[0, :, 3:, 0] = 7
        >>> preds = target.clone()
        >>> preds[0, 0, 3, 0] = 1
        >>> metric = PanopticQuality(things={1}, stuffs={7}, return_sq_and_rq=True)
        >>> metric.update(preds, target)
        >>> metric.compute()
        tensor([0.9199, 0.9199, 1.0000], dtype=torch.float64)
        >>> coco = PanopticQuality({1}, {7}, iou_type="boundary", output="dict", rules="panopticapi")
        >>> coco.update(preds, target)
        >>> round(float(coco.compute()["pq"]), 4), int(coco.compute()["n"])
        (0.8636, 2)
    """

    def __init__(
        self, things: Collection[int], stuffs: Collection[int], allow_unknown_preds_category: bool = False,
        return_sq_and_rq: bool = False, return_per_class: bool = False, *, iou_type: PanopticIouType = "segm",
        dilation_ratio: float = 0.02, output: PanopticOutput = "tensor", rules: PanopticRules = "torchmetrics",
        category_order: Sequence[int] | None = None, validate_args: bool = True, engine: Engine = "auto",
        **kwargs: Any,
    ) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        named: dict[str, Any] = {"iou_type": iou_type, "dilation_ratio": dilation_ratio}
        allow_unknown_preds_category, return_sq_and_rq = _legacy_positional(
            allow_unknown_preds_category, return_sq_and_rq, named)
        self._setup(things, stuffs, allow_unknown_preds_category, return_sq_and_rq, return_per_class,
                    named["iou_type"], named["dilation_ratio"], output, rules, category_order, engine)


class ModifiedPanopticQuality(_PanopticMetric):
    __doc__ = """Modified PQ (Porzi et al., *Seamless Scene Segmentation*, CVPR 2019); torchmetrics'
    ``ModifiedPanopticQuality`` with the same arguments and output: the things as :class:`PanopticQuality` scores
    them, each stuff class as :math:`\\sum IoU / |gt segments|` over all its same-category pairs (no IoU > 0.5
    matching, no FP / FN).
    """ + _INPUTS_AND_ARGS + """ The scalar mean over the classes that occur
      (NaN over none, ``rules="torchmetrics"``).
    - ``output="dict"`` / ``"panopticapi"``: as :class:`PanopticQuality`'s, with the stuff classes' values modified.

    Args:
        things: category ids of the things.
        stuffs: category ids of the stuffs (scored the modified way).
        allow_unknown_preds_category: read prediction points of unknown categories as void (else an error).
        iou_type: ``"segm"`` or ``"boundary"`` (2-D images only).
        dilation_ratio: band width as a fraction of the image diagonal.
        output: ``"tensor"``, ``"dict"`` or ``"panopticapi"``.
        rules: ``"torchmetrics"`` (default) or ``"panopticapi"`` (the void rules).
        category_order: the order of the per-class values and states.
        validate_args: run the checks that read the data back.
        engine: ``"auto"``, ``"data_sized"`` or ``"fixed"``; the values are the same.

    Examples:
        >>> import torch
        >>> preds = torch.tensor([[[0, 0], [0, 1], [6, 0], [7, 0], [0, 2], [1, 0]]])
        >>> target = torch.tensor([[[0, 1], [0, 0], [6, 0], [7, 0], [6, 0], [255, 0]]])
        >>> metric = ModifiedPanopticQuality(things={0, 1}, stuffs={6, 7})
        >>> metric(preds, target)
        tensor(0.7667, dtype=torch.float64)
    """

    _modified = True

    def __init__(
        self, things: Collection[int], stuffs: Collection[int], allow_unknown_preds_category: bool = False, *,
        iou_type: PanopticIouType = "segm", dilation_ratio: float = 0.02, output: PanopticOutput = "tensor",
        rules: PanopticRules = "torchmetrics", category_order: Sequence[int] | None = None,
        validate_args: bool = True, engine: Engine = "auto", **kwargs: Any,
    ) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        self._setup(things, stuffs, allow_unknown_preds_category, False, False, iou_type, dilation_ratio, output,
                    rules, category_order, engine)
