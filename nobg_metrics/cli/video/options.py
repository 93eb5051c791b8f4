"""The flags of ``nobg-metrics eval --preset davis`` (importable without torch or numpy: the parser adds them)."""

from __future__ import annotations

import argparse


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The flags of ``--preset davis``."""
    group.add_argument("--davis-set", metavar="NAME", default="val",
                       help="--preset davis: the ImageSets/2017/NAME.txt list of sequences, when the DAVIS root "
                            "has it (default val; otherwise every sequence folder)")
    group.add_argument("--davis-resolution", metavar="NAME", default="480p",
                       help="--preset davis: the Annotations/NAME folder of the DAVIS root (default 480p)")
    group.add_argument("--davis-decay", choices=("reference", "exact"), default="reference",
                       help="--preset davis: decay bins as davis2017-evaluation computes them (reference: its uint8 "
                            "indices, NaN from 256 scored frames on) or exact integer bins")
