"""The console summary of ``nobg-metrics instances``, line for line as the reference tools print theirs.

COCO: pycocotools' ``COCOeval.summarize`` (its ``_summarizeDets``: 12 lines, ``iStr = ' {:<18} {} @[ IoU={:<9} |
area={:>6s} | maxDets={:>3d} ] = {:0.3f}'``). LVIS: lvis' ``LVISEval.print_results`` (13 lines, its template with
``catIds``, keys read as lvis reads them: ``AP50`` -> IoU 0.50, ``APs`` -> area ``s``, ``APr`` -> catIds ``r``).
A value of -1 (no ground truth in that cell) prints as ``-1.000``, as there. Importable without torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

COCO_TEMPLATE = " {:<18} {} @[ IoU={:<9} | area={:>6s} | maxDets={:>3d} ] = {:0.3f}"
LVIS_TEMPLATE = " {:<18} {} @[ IoU={:<9} | area={:>6s} | maxDets={:>3d} catIds={:>3s}] = {:0.3f}"


def coco_lines(values: Mapping[str, float], max_dets: Sequence[int] = (1, 10, 100),
               iou_range: tuple[float, float] = (0.5, 0.95)) -> list[str]:
    """pycocotools' 12 summary lines from the metric's ``map``, ``map_50``, ..., ``mar_large`` values.

    Examples:
        >>> coco_lines({"map": 0.5, "map_50": 1.0, "map_75": -1.0, "map_small": 0.25, "map_medium": 0.5,
        ...             "map_large": 0.75, "mar_1": 0.5, "mar_10": 0.5, "mar_100": 0.5, "mar_small": 0.5,
        ...             "mar_medium": 0.5, "mar_large": 0.5})[2]
        ' Average Precision  (AP) @[ IoU=0.75      | area=   all | maxDets=100 ] = -1.000'
    """
    last = max_dets[-1]
    every = "{:0.2f}:{:0.2f}".format(*iou_range)
    rows = [  # _summarizeDets: (ap, iouThr, areaRng, maxDets, our key)
        (True, every, "all", last, "map"), (True, "0.50", "all", last, "map_50"),
        (True, "0.75", "all", last, "map_75"), (True, every, "small", last, "map_small"),
        (True, every, "medium", last, "map_medium"), (True, every, "large", last, "map_large"),
        *[(False, every, "all", k, f"mar_{k}") for k in max_dets],
        (False, every, "small", last, "mar_small"), (False, every, "medium", last, "mar_medium"),
        (False, every, "large", last, "mar_large"),
    ]
    return [COCO_TEMPLATE.format("Average Precision" if ap else "Average Recall", "(AP)" if ap else "(AR)", iou, area,
                                 dets, float(values[key])) for ap, iou, area, dets, key in rows]


LVIS_KEYS = (("AP", "map"), ("AP50", "map_50"), ("AP75", "map_75"), ("APs", "map_small"), ("APm", "map_medium"),
             ("APl", "map_large"), ("APr", "map_rare"), ("APc", "map_common"), ("APf", "map_frequent"))
"""lvis' ``results`` keys in its order (then ``AR@<maxDets>`` and ``ARs/m/l@<maxDets>``) and the metric's names."""


def lvis_lines(values: Mapping[str, float], max_dets: int = 300,
               iou_range: tuple[float, float] = (0.5, 0.95)) -> list[str]:
    """lvis' ``print_results`` lines from the metric's values.

    Examples:
        >>> values = dict.fromkeys(["map", "map_50", "map_75", "map_small", "map_medium", "map_large", "map_rare",
        ...                         "map_common", "map_frequent", "mar_300", "mar_small", "mar_medium",
        ...                         "mar_large"], 0.5)
        >>> lvis_lines(values)[6]
        ' Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=300 catIds=  r] = 0.500'
    """
    keys = [*LVIS_KEYS, (f"AR@{max_dets}", f"mar_{max_dets}"),
            *[(f"AR{size[0]}@{max_dets}", f"mar_{size}") for size in ("small", "medium", "large")]]
    lines = []
    for key, ours in keys:
        if "AP" in key:
            title, kind = "Average Precision", "(AP)"
        else:
            title, kind = "Average Recall", "(AR)"
        if len(key) > 2 and key[2].isdigit():
            iou = f"{float(key[2:]) / 100:0.2f}"
        else:
            iou = "{:0.2f}:{:0.2f}".format(*iou_range)
        group = key[2] if len(key) > 2 and key[2] in ("r", "c", "f") else "all"
        area = key[2] if len(key) > 2 and key[2] in ("s", "m", "l") else "all"
        lines.append(LVIS_TEMPLATE.format(title, kind, iou, area, max_dets, group, float(values[ours])))
    return lines
