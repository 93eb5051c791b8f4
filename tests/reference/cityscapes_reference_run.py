"""Run the real boundary-iou-api Cityscapes instance evaluation (``tools/cityscapes_instance_evaluation.py``, commit
37d2558, on cityscapesScripts) unchanged, in a subprocess, for the hand-run check and the benchmark (the tests never
need it)::

    mkdir -p /tmp/bia /tmp/css
    git -C <boundary-iou-api mirror> archive HEAD | tar -x -C /tmp/bia
    git -C <cityscapesScripts mirror> archive HEAD | tar -x -C /tmp/css
    BOUNDARY_IOU_API=/tmp/bia CITYSCAPES_SCRIPTS=/tmp/css python -m tests.reference.check_cityscapes_port

What it takes to run them today, and nothing else: numpy 2 lost the ``np.float`` alias the script uses
(``np.zeros(..., np.float)``), restored as ``float``; cityscapesScripts' helpers import ``pyquaternion`` (3D boxes
only) and the tool imports ``fvcore``'s ``PathManager`` (``get_local_path`` of a local folder): stand-ins are put on
the path when those packages are missing. The tool runs with ``--clear-results`` (it caches the gts in
``RESULT_DIR/gtInstances.json`` and would reuse a stale cache) and its ``evaluateImgLists`` result is captured whole.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_STUBS = {
    "pyquaternion/__init__.py": ("class Quaternion:  # stand-in: only cityscapesScripts' 3D-box helpers use it\n"
                                 "    pass\n"),
    "fvcore/__init__.py": "",
    "fvcore/common/__init__.py": "",
    "fvcore/common/file_io.py": ("class PathManager:\n    @staticmethod\n"
                                 "    def get_local_path(path):\n        return path\n"),
}

_DRIVER = r"""
import json, os, runpy, sys, time, warnings
root, scripts, stubs, out = sys.argv[1:5]
sys.path[:0] = [root, scripts]
for name in ("pyquaternion", "fvcore"):
    try:
        __import__(name)
    except ImportError:
        sys.path.insert(0, stubs)
import numpy as np
np.float = float  # removed in numpy 1.24; the script's np.zeros(..., np.float)
warnings.filterwarnings("ignore", category=DeprecationWarning)
import boundary_iou.cityscapes_instance_api.evalInstanceLevelSemanticLabeling as cs_eval
captured = {}
original = cs_eval.evaluateImgLists
def evaluate(*args, **kwargs):
    start = time.perf_counter()
    captured["result"] = original(*args, **kwargs)
    captured["seconds"] = time.perf_counter() - start
    return captured["result"]
cs_eval.evaluateImgLists = evaluate
sys.argv = ["cityscapes_instance_evaluation.py", *sys.argv[5:]]
tool = runpy.run_path(os.path.join(root, "tools", "cityscapes_instance_evaluation.py"), run_name="tool")
tool["main"]()
def plain(x):
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return plain(x.tolist())
    return float(x) if isinstance(x, np.floating) else x
with open(out, "w") as handle:
    json.dump({"result": plain(captured["result"]), "seconds": captured["seconds"]}, handle)
"""


def reference_paths() -> tuple[str, str] | None:
    """``(BOUNDARY_IOU_API, CITYSCAPES_SCRIPTS)`` from the environment, or ``None`` when either is unset."""
    root, scripts = os.environ.get("BOUNDARY_IOU_API"), os.environ.get("CITYSCAPES_SCRIPTS")
    return (root, scripts) if root and scripts else None


def run_reference(gt_dir: Path, result_dir: Path, iou_type: str, dilation_ratio: float,
                  paths: tuple[str, str] | None = None) -> dict[str, Any]:
    """The tool's ``evaluateImgLists`` dict (``"result"``), its own time (``"seconds"``, without start-up) and
    what it printed (``"stdout"``); a failure of the tool (e.g. its ``IndexError``) raises ``RuntimeError`` with
    its stderr."""
    root, scripts = paths or reference_paths() or ("", "")
    if not root:
        raise RuntimeError("set BOUNDARY_IOU_API and CITYSCAPES_SCRIPTS to the unpacked references")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in _STUBS.items():
            (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / name).write_text(text)
        out = Path(tmp) / "result.json"
        command = [sys.executable, "-c", _DRIVER, root, scripts, tmp, str(out), "--gt_dir", str(gt_dir),
                   "--result_dir", str(result_dir), "--iou-type", iou_type, "--dilation-ratio", repr(dilation_ratio),
                   "--clear-results"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-3000:])
        report = json.loads(out.read_text())
        report["stdout"] = done.stdout
        gt_cache = Path(result_dir) / "gtInstances.json"
        if gt_cache.exists():
            gt_cache.unlink()
        return report


def reference_evaluator(paths: tuple[str, str] | None = None) -> Any:
    """The tool's evaluation in this process (for timing side by side): ``evaluate(gt_dir, result_dir, iou_type,
    ratio)`` sets the module's ``args`` as ``tools/cityscapes_instance_evaluation.py``'s ``main`` does (no gt cache
    file: ``gtInstancesFile`` in a temporary folder, removed after each call), globs the gts, finds each prediction
    file with ``getPrediction`` and returns ``evaluateImgLists(...)``. Restores ``np.float`` for good in this process.
    """
    import glob

    import numpy as np

    root, scripts = paths or reference_paths() or ("", "")
    if not root:
        raise RuntimeError("set BOUNDARY_IOU_API and CITYSCAPES_SCRIPTS to the unpacked references")
    stubs = tempfile.mkdtemp(prefix="cityscapes-stubs-")
    for name, text in _STUBS.items():
        (Path(stubs) / name).parent.mkdir(parents=True, exist_ok=True)
        (Path(stubs) / name).write_text(text)
    sys.path[:0] = [root, scripts]
    for module in ("pyquaternion", "fvcore"):
        try:
            __import__(module)
        except ImportError:
            sys.path.insert(0, stubs)
    np.float = float  # type: ignore[attr-defined]  # removed in numpy 1.24; the script's np.zeros(..., np.float)
    import boundary_iou.cityscapes_instance_api.evalInstanceLevelSemanticLabeling as cs_eval

    def evaluate(gt_dir: Path, result_dir: Path, iou_type: str, dilation_ratio: float) -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as cache:
            cs_eval.args.predictionPath = os.path.abspath(result_dir)
            cs_eval.args.predictionWalk = None
            cs_eval.args.JSONOutput = False
            cs_eval.args.colorized = False
            cs_eval.args.gtInstancesFile = os.path.join(cache, "gtInstances.json")
            cs_eval.args.iou_type = iou_type
            cs_eval.args.dilation_ratio = dilation_ratio
            gts = glob.glob(os.path.join(str(gt_dir), "*", "*_gtFine_instanceIds.png"))
            predictions = [cs_eval.getPrediction(gt, cs_eval.args) for gt in gts]
            return cs_eval.evaluateImgLists(predictions, gts, cs_eval.args)

    return evaluate
