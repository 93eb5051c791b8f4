"""The two lean command runs the start-up tests watch: a 1-image ``instances`` run (one square, gt and detection) and
``panoptic``'s import of its run, which stops at a missing file."""

from __future__ import annotations

import json
from pathlib import Path


def lean_runs(folder: Path) -> list[tuple[list[str], int]]:
    """``(argv, expected exit status)`` of each run; the instances files are written into ``folder``."""
    square = [[1.0, 1.0, 6.0, 1.0, 6.0, 6.0, 1.0, 6.0]]
    (folder / "gt.json").write_text(json.dumps({
        "images": [{"id": 1, "height": 8, "width": 8}], "categories": [{"id": 1}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "segmentation": square, "area": 25}]}))
    (folder / "dt.json").write_text(json.dumps([{"image_id": 1, "category_id": 1, "score": 1.0,
                                                 "segmentation": square}]))
    return [(["instances", "--gt-json-file", str(folder / "gt.json"), "--dt-json-file", str(folder / "dt.json"),
              "--quiet", "--device", "cpu"], 0),
            (["panoptic", "--gt-json-file", str(folder / "missing.json"), "--pred-json-file",
              str(folder / "missing2.json")], 1)]
