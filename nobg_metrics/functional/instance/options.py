"""Options of instance-segmentation AP (COCO / LVIS protocols), validated once, with the references' defaults.

Defaults as pycocotools ``Params.setDetParams`` and LVIS ``Params`` define them:

- IoU thresholds ``np.linspace(.5, .95, 10)`` and recall thresholds ``np.linspace(0, 1, 101)`` in float64
  (:func:`numpy_linspace` computes numpy's values: torchmetrics' ``torch.linspace`` float32 defaults, e.g.
  0.550000011920929, move matches whose IoU lies between the two);
- max detections ``[1, 10, 100]`` per image and category (COCO) or ``[300]`` per image (LVIS);
- area ranges ``all [0, 1e5²]``, ``small [0, 32²]``, ``medium [32², 96²]``, ``large [96², 1e5²]``: inclusive at both
  ends for COCO, upper end exclusive for LVIS (boundary-iou-api's ``lvis_instance_api``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from nobg_metrics._inputs import check_flag, check_number, check_option

IouType = Literal["bbox", "segm", "boundary"]
Protocol = Literal["coco", "lvis"]
Average = Literal["macro", "micro"]
FREQUENCIES = ("r", "c", "f")
"""LVIS category frequency groups: rare, common, frequent (``map_rare``, ``map_common``, ``map_frequent``)."""

AREA_RANGES = ((0.0, 1e5**2), (0.0, 32.0**2), (32.0**2, 96.0**2), (96.0**2, 1e5**2))
AREA_NAMES = ("all", "small", "medium", "large")


def numpy_linspace(start: float, stop: float, num: int) -> tuple[float, ...]:
    """``np.linspace(start, stop, num)`` value for value (float64): ``i * step + start``, the last set to ``stop``.

    Examples:
        >>> numpy_linspace(0.5, 0.95, 10)[8]  # not 0.9: numpy's value, which pycocotools compares against
        0.8999999999999999
    """
    if num == 1:
        return (float(start),)
    step = (stop - start) / (num - 1)
    values = [index * step + start for index in range(num)]
    values[-1] = float(stop)
    return tuple(values)


@dataclass(frozen=True)
class InstanceOptions:
    """Every option that changes the statistics or the value of instance AP (see :func:`make_options`)."""

    iou_type: str
    dilation_ratio: float
    protocol: str
    iou_thresholds: tuple[float, ...]
    rec_thresholds: tuple[float, ...]
    max_detection_thresholds: tuple[int, ...]
    class_metrics: bool
    average: str
    extended_summary: bool
    category_frequencies: tuple[tuple[int, str], ...]

    @property
    def lvis(self) -> bool:
        """The LVIS protocol (per-image cap, federated filters, exclusive upper area bounds)."""
        return self.protocol == "lvis"

    @property
    def match_thresholds(self) -> tuple[float, ...]:
        """``min(t, 1 - 1e-10)`` for each threshold, as ``evaluateImg`` starts its search."""
        return tuple(min(t, 1 - 1e-10) for t in self.iou_thresholds)

    @property
    def needs_macro(self) -> bool:
        """Per-category matching is needed (the average is macro, or per-class values are asked for)."""
        return self.average == "macro" or self.class_metrics


def _float_list(name: str, values: object) -> tuple[float, ...]:
    if not isinstance(values, Sequence) or isinstance(values, str) or len(values) == 0:
        raise ValueError(f"`{name}` must be None or a non-empty list of floats in [0, 1], got {values!r}")
    for value in values:
        check_number(f"{name}[...]", value, low=0.0, high=1.0)
    return tuple(float(value) for value in values)


def _max_detections(values: object, protocol: str) -> tuple[int, ...]:
    if not isinstance(values, Sequence) or isinstance(values, str) or len(values) == 0:
        raise ValueError(f"`max_detection_thresholds` must be None or a non-empty list of ints >= 1, got {values!r}")
    # The summary has one AR per cap and reads AP at the largest: COCO's is AR@1/10/100 (pycocotools' summarize reads
    # three caps; torchmetrics refuses any other length, with this message), LVIS' one cap per image (``max_dets``).
    if protocol == "coco" and len(values) != 3:
        raise ValueError("When providing a list of max detection thresholds it should have length 3. Got value "
                         f"{len(values)} (`max_detection_thresholds` {list(values)}: protocol='coco' reports AR at "
                         "three caps)")
    if protocol == "lvis" and len(values) != 1:
        raise ValueError(f"`max_detection_thresholds` must hold one cap per image for protocol='lvis' (LVIS' "
                         f"max_dets), got {list(values)}")
    for value in values:
        check_number("max_detection_thresholds[...]", value, low=1, integer=True)
    if len(set(values)) != len(values):
        raise ValueError(f"`max_detection_thresholds` must not repeat a value (its mar_<k> keys would collide), "
                         f"got {list(values)}")
    return tuple(sorted(int(value) for value in values))  # pycocotools: p.maxDets = sorted(p.maxDets)


def _frequencies(frequencies: Mapping[int, str] | None) -> tuple[tuple[int, str], ...]:
    if frequencies is None:
        return ()
    if not isinstance(frequencies, Mapping):
        raise TypeError(f"`category_frequencies` must be a dict {{category id: 'r' | 'c' | 'f'}}, got "
                        f"{type(frequencies).__name__}")
    for category, group in frequencies.items():
        check_number("category_frequencies key", category, integer=True)
        check_option(f"category_frequencies[{category}]", group, FREQUENCIES)
    return tuple(sorted((int(category), str(group)) for category, group in frequencies.items()))


def make_options(
    iou_type: str = "segm", dilation_ratio: float = 0.02, protocol: str = "coco",
    iou_thresholds: Sequence[float] | None = None, rec_thresholds: Sequence[float] | None = None,
    max_detection_thresholds: Sequence[int] | None = None, class_metrics: bool = False, average: str = "macro",
    extended_summary: bool = False, category_frequencies: Mapping[int, str] | None = None,
) -> InstanceOptions:
    """Validate the options (errors name the option) and fill in the protocol's defaults.

    Examples:
        >>> options = make_options("boundary", protocol="lvis")
        >>> options.max_detection_thresholds, len(options.iou_thresholds), options.rec_thresholds[1]
        ((300,), 10, 0.01)
    """
    check_option("iou_type", iou_type, IouType)
    check_number("dilation_ratio", dilation_ratio, low=0.0)
    check_option("protocol", protocol, Protocol)
    check_flag("class_metrics", class_metrics)
    check_option("average", average, Average)
    check_flag("extended_summary", extended_summary)
    if protocol == "lvis" and average == "micro":
        raise ValueError("`average='micro'` is defined for protocol='coco' only (LVIS' federated filters are per "
                         "category); use average='macro'")
    if category_frequencies is not None and protocol != "lvis":
        raise ValueError("`category_frequencies` is an LVIS option; pass protocol='lvis' with it")
    default_dets = (300,) if protocol == "lvis" else (1, 10, 100)
    return InstanceOptions(
        iou_type=iou_type, dilation_ratio=float(dilation_ratio), protocol=protocol,
        iou_thresholds=numpy_linspace(0.5, 0.95, 10) if iou_thresholds is None else _float_list(
            "iou_thresholds", iou_thresholds),
        rec_thresholds=numpy_linspace(0.0, 1.0, 101) if rec_thresholds is None else _float_list(
            "rec_thresholds", rec_thresholds),
        max_detection_thresholds=default_dets if max_detection_thresholds is None else _max_detections(
            max_detection_thresholds, protocol),
        class_metrics=class_metrics, average=average, extended_summary=extended_summary,
        category_frequencies=_frequencies(category_frequencies),
    )
