"""Which DAVIS sequences a run scores (``nobg-metrics video``, alias ``eval --preset davis``): the ``--gt`` folder and
its sequences (davis2017-evaluation ``davis2017/davis.py``).

- ``--gt`` is the DAVIS root (``Annotations/480p/<seq>/*.png``; ``--davis-resolution`` picks another folder) or
  an annotations folder of sequence folders itself. The sequences are the lines of ``ImageSets/2017/<set>.txt``
  when the root has it (``--davis-set``, default ``val``), else every sequence folder, sorted.

The frames themselves are read by :mod:`nobg_metrics.io.davis`.
"""

from __future__ import annotations

import os
from pathlib import Path

from nobg_metrics.cli.core.errors import ConfigError, InputError
from nobg_metrics.cli.eval.config import folder_problem, split_named
from nobg_metrics.io.davis import DavisLayout, DavisSequence


def _pngs(folder: Path) -> tuple[Path, ...]:
    return tuple(sorted((folder / name for name in os.listdir(folder) if name.endswith(".png")), key=str))


def read_layout(gt: str, set_name: str, resolution: str) -> DavisLayout:
    """The sequences of ``--gt`` (module doc); a :class:`ConfigError` names what is missing."""
    _, path = split_named(gt)
    root = Path(path)
    problem = folder_problem(root)
    if problem is not None:
        raise ConfigError(f"--gt {root} {problem}")
    annotations = root / "Annotations" / resolution
    names: list[str] | None = None
    if annotations.is_dir():
        listing = root / "ImageSets" / "2017" / f"{set_name}.txt"
        if listing.is_file():
            names = [line.strip() for line in listing.read_text().splitlines() if line.strip()]
    else:
        annotations = root
    if names is None:
        names = sorted(entry for entry in os.listdir(annotations) if (annotations / entry).is_dir())
    sequences = []
    for name in names:
        folder = annotations / name
        if not folder.is_dir():
            raise ConfigError(f"--gt: the sequence {name} of {set_name}.txt has no folder in {annotations}")
        frames = _pngs(folder)
        if len(frames) < 3:  # the first and last frames are not scored: the reference's statistics are NaN
            raise InputError(f"sequence {name} has {len(frames)} gt frame(s) in {folder}; the semi-supervised "
                             f"protocol scores every frame but the first and the last, so it needs at least 3")
        sequences.append(DavisSequence(name, frames))
    if not sequences:
        raise ConfigError(f"--gt {root}: no sequence folder in {annotations}")
    return DavisLayout(annotations, set_name, tuple(sequences))
