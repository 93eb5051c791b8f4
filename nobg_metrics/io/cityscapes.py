"""Reading a Cityscapes instance evaluation for ``nobg-metrics instances --cityscapes`` (docs/cityscapes_instances.md).

The layout of boundary-iou-api's ``tools/cityscapes_instance_evaluation.py`` and cityscapesScripts'
``evalInstanceLevelSemanticLabeling.py``:

- gts: ``GT_DIR/*/*_gtFine_instanceIds.png`` (one folder per city), 16-bit PNGs read as Pillow gives them
  (``np.array(Image.open(f))``: mode ``I;16`` -> uint16; ``I`` -> int32 and 8-bit ``L`` are accepted too), values
  ``label id * 1000 + instance`` or a bare label id;
- predictions: for a gt ``CITY_SEQ_FRAME_gtFine_instanceIds.png``, the one file ``CITY_SEQ_FRAME*.txt`` anywhere
  under ``RESULT_DIR`` (``getPrediction``: none or several is an error), one line per mask:
  ``relative/path.png LABEL_ID SCORE``, the path relative to the text file's folder (``readPredInfo``);
- a mask: ``Image.open(f).convert("L") != 0`` at the gt's size; masks of classes that are not evaluated are not
  read (the reference skips them before opening them), empty masks are dropped.

Kept from the reference: a mask listed twice in one file counts once, with the last line's label and score (its
dict keyed by path). Stricter, each a :class:`InputError` naming the file and line: a line without exactly
three fields (blank lines are skipped), an absolute path, a non-integer label (the reference truncates
``int(float(x))``), an unknown label id (a ``KeyError`` there), a NaN score, a missing or unreadable PNG, a mask of
another size (a numpy broadcast error there), a gt with a colour mode or a value outside the encoding.
"""

from __future__ import annotations

import fnmatch
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from nobg_metrics.io.errors import InputError

GT_PATTERN = "*_gtFine_instanceIds.png"
EVAL_LABEL_IDS = frozenset((24, 25, 26, 27, 28, 31, 32, 33))
"""Read here without importing the library (torch):
:data:`nobg_metrics.functional.instance.cityscapes_labels.EVAL_LABEL_IDS`."""
KNOWN_LABEL_IDS = frozenset(range(-1, 34))


@dataclass
class Prediction:
    """One listed mask: ``path`` (absolute), ``label`` id, ``score``, and where it was listed (``file:line``)."""

    path: Path
    label: int
    score: float
    where: str


@dataclass
class ImagePair:
    """A gt file and its prediction list."""

    gt: Path
    predictions: Path


def find_gts(gt_dir: Path) -> list[Path]:
    """``GT_DIR/*/*_gtFine_instanceIds.png``, sorted (the reference globs the same pattern)."""
    if not gt_dir.is_dir():
        raise InputError(f"--gt-dir {gt_dir} is not a folder")
    found = sorted(gt_dir.glob(f"*/{GT_PATTERN}"))
    if not found:
        raise InputError(f"no ground truth under --gt-dir {gt_dir}: looked for {gt_dir}/*/{GT_PATTERN}")
    return found


def frame_prefix(gt: Path) -> str:
    """``CITY_SEQ_FRAME`` of a gt file name (cityscapesScripts' ``getCsFileInfo``: 5 or 6 ``_``-separated parts)."""
    stem, _, extension = gt.name.rpartition(".")
    parts = [*stem.split("_"), extension]
    if len(parts) not in (5, 6):
        raise InputError(f"{gt}: not a Cityscapes file name (CITY_SEQUENCE_FRAME_TYPE[_TYPE2].EXT; it has "
                                   f"{len(parts)} parts)")
    return "_".join(parts[:3])


def match_predictions(gts: list[Path], result_dir: Path) -> list[ImagePair]:
    """Each gt's one ``CITY_SEQ_FRAME*.txt`` under ``result_dir`` (searched recursively)."""
    if not result_dir.is_dir():
        raise InputError(f"--result-dir {result_dir} is not a folder")
    texts = [Path(root) / name for root, _, names in os.walk(result_dir) for name in names if name.endswith(".txt")]
    pairs = []
    for gt in gts:
        pattern = f"{frame_prefix(gt)}*.txt"
        found = sorted(path for path in texts if fnmatch.fnmatchcase(path.name, pattern))
        if not found:
            raise InputError(f"no prediction for {gt}: no {pattern} under --result-dir {result_dir}")
        if len(found) > 1:
            raise InputError(f"several predictions for {gt}: {', '.join(map(str, found[:3]))}"
                                       f"{' ...' if len(found) > 3 else ''}")
        pairs.append(ImagePair(gt, found[0]))
    return pairs


def read_prediction_list(path: Path) -> list[Prediction]:
    """The masks a prediction file lists, in first-listed order (a repeated path: its last line's label and score)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot be read ({error})") from None
    listed: dict[Path, Prediction] = {}
    for number, line in enumerate(lines, 1):
        where = f"{path}:{number}"
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 3:
            raise InputError(f"{where}: expected 'relative/mask.png LABEL_ID SCORE', got {line.strip()!r}")
        name, label_text, score_text = fields
        if os.path.isabs(name):
            raise InputError(f"{where}: the mask path must be relative to the file's folder, got {name}")
        try:
            label_value = float(label_text)
            score = float(score_text)
        except ValueError:
            raise InputError(f"{where}: LABEL_ID and SCORE must be numbers, got {label_text!r} "
                                       f"{score_text!r}") from None
        if not label_value.is_integer() or int(label_value) not in KNOWN_LABEL_IDS:
            raise InputError(f"{where}: {label_text} is not a Cityscapes label id (-1..33, labels.py's "
                                       f"`id`, not the train id; evaluated: 24-28, 31-33)")
        if math.isnan(score):
            raise InputError(f"{where}: the score is NaN")
        mask = Path(os.path.abspath(path.parent / name))
        listed[mask] = Prediction(mask, int(label_value), score, where)
    return list(listed.values())


def read_gt(path: Path) -> np.ndarray:
    """An instanceIds PNG as Pillow gives it (uint16 for a 16-bit PNG), its values checked: ``(H, W)``."""
    try:
        with Image.open(path) as image:
            mode = image.mode
            values = np.array(image)
    except (OSError, ValueError) as error:
        raise InputError(f"{path}: cannot be read as an image ({error})") from None
    if mode not in ("I;16", "I;16B", "I;16L", "I", "L") or values.ndim != 2:
        raise InputError(f"{path}: an instanceIds map must be a one-channel 16-bit PNG; got mode {mode}")
    outside = (values > 33) & (values < 1000)
    low, high = int(values.min()), int(values.max())
    if low < -1 or high >= 34000 or outside.any():
        bad = low if low < -1 else high if high >= 34000 else int(values[outside][0])
        raise InputError(f"{path}: holds {bad}, which is not a Cityscapes instanceIds value (a label id "
                                   f"-1..33, or label id * 1000 + instance: 1000..33999)")
    return values


def read_masks(predictions: list[Prediction], size: tuple[int, int]) -> np.ndarray:
    """``Image.open(f).convert("L") != 0`` of each prediction at the gt's ``size`` (H, W): :math:`(N, H, W)` bool
    (an ``L`` image is compared as it is: ``convert("L")`` of it is a copy)."""
    masks = np.empty((len(predictions), *size), dtype=bool)
    for index, prediction in enumerate(predictions):  # one file per mask
        try:
            with Image.open(prediction.path) as image:
                grey = image if image.mode == "L" else image.convert("L")
                if grey.size != (size[1], size[0]):
                    raise InputError(f"{prediction.where}: the mask {prediction.path} is {grey.size[0]}x"
                                               f"{grey.size[1]}, its gt {size[1]}x{size[0]}")
                np.not_equal(np.asarray(grey), 0, out=masks[index])
        except FileNotFoundError:
            raise InputError(f"{prediction.where}: the mask {prediction.path} does not exist") from None
        except (OSError, ValueError) as error:
            raise InputError(f"{prediction.where}: {prediction.path} cannot be read ({error})") from None
    return masks
