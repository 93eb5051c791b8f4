"""The DAVIS 2017 layout's files, read as davis2017-evaluation reads them (``davis2017/davis.py``, ``results.py``,
``evaluation.py``; docs/boundary_measures.md "The command"). Which sequences a run scores is the command's
(:mod:`nobg_metrics.cli.video.layout`).

- A sequence's frames are its ``*.png`` files in sorted order; a frame's id is its name without the last
  extension and without dots (the reference's ``''.join(name.split('.')[:-1])``), and each method's results
  folder must hold ``<seq>/<id>.png`` for every scored frame.
- PNGs hold object ids (palette indices, or grey levels): ``np.array(Image.open(path))``. In the gt, 255 is void
  and read as background (the semi-supervised protocol scores no void). The objects are ids ``1 .. max`` of the
  sequence's first gt frame; each is scored on its own (``bike-packing_1``, ``bike-packing_2``) on every frame
  but the first and the last. Results holding an id above that count are refused (the reference exits);
  objects a result never shows are empty masks.

Importable without torch or Pillow (Pillow is imported when a PNG is read).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nobg_metrics.io.errors import InputError

VOID_LABEL = 255


@dataclass(frozen=True)
class DavisSequence:
    """One sequence of the gt: its name, gt frame files in order and their ids."""

    name: str
    frames: tuple[Path, ...]

    @property
    def ids(self) -> list[str]:
        """Frame ids: the file name without its last extension, dots removed (as the reference builds them)."""
        return ["".join(path.name.split(".")[:-1]) for path in self.frames]


@dataclass(frozen=True)
class DavisLayout:
    """The gt side of a run: where the annotations are, the set's name and its sequences in order."""

    annotations: Path
    set_name: str
    sequences: tuple[DavisSequence, ...]


def read_ids(path: Path) -> np.ndarray:
    """The object ids of one PNG, :math:`(H, W)` integers (:class:`InputError` when it cannot be read as one)."""
    from PIL import Image  # here: the argument parser imports this module for its flags

    try:
        with Image.open(path) as image:
            ids = np.array(image)
    except FileNotFoundError:
        raise InputError(f"{path} is missing (the results need a PNG for every scored gt frame)") from None
    except OSError as error:
        raise InputError(f"{path} cannot be read as a PNG of object ids ({error})") from None
    if ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer):
        raise InputError(f"{path} must be an indexed (palette) or grey PNG of object ids; it decodes to "
                         f"{ids.dtype} of shape {ids.shape}")
    return ids


def _compact(ids: np.ndarray) -> np.ndarray:
    """uint8 ids as they are (a sequence of 854x480 frames stays small), other integers as int32."""
    return ids if ids.dtype == np.uint8 else ids.astype(np.int32)


def gt_objects(sequence: DavisSequence) -> tuple[np.ndarray, int]:
    """``(ids of the scored frames (T, H, W), number of objects)``: void read as background, objects ``1 .. max`` of
    the first frame."""
    frames = [read_ids(path) for path in sequence.frames]
    shapes = {frame.shape for frame in frames}
    if len(shapes) > 1:
        raise InputError(f"sequence {sequence.name}: the gt frames differ in size ({sorted(shapes)})")
    ids = _compact(np.stack(frames))
    ids[ids == VOID_LABEL] = 0
    return ids[1:-1], int(ids[0].max())


def result_objects(folder: Path, sequence: DavisSequence, shape: tuple[int, int], count: int) -> np.ndarray:
    """The ids of a method's results on the scored frames, :math:`(T, H, W)`, checked against the gt."""
    frames = []
    for frame_id in sequence.ids[1:-1]:
        path = folder / sequence.name / f"{frame_id}.png"
        ids = read_ids(path)
        if ids.shape != shape:
            raise InputError(f"{path} is {ids.shape[1]}x{ids.shape[0]}; the gt frame is {shape[1]}x{shape[0]}")
        frames.append(ids)
    ids = _compact(np.stack(frames))
    if int(ids.max()) > count:
        raise InputError(f"{folder / sequence.name}: the results hold object id {int(ids.max())}, but the "
                         f"sequence's first gt frame has {count} object(s) (an index higher than the number of "
                         f"objects, as davis2017-evaluation refuses it)")
    return ids
