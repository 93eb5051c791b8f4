"""PySODEvalToolkit's command line on ``nobg-metrics eval``: its metric names and its flags (docs/cli.md "Coming from
PySODEvalToolkit").

Its ``eval.py`` (``--metric-names``, ``--num-bits``, ``--num-workers``, ``--record-txt``, ``--record-xlsx``,
``--metric-npy``, ``--curves-npy``, ``--to-overwrite``, ``--data-type``; the JSON and include / exclude flags are the
command's own) is accepted with its meaning where the command has one, and otherwise refused by the parser (exit 2,
before torch loads) with what to use instead: the command writes all its results into ``--out``.

Metric names (``utils/recorders/metric_recorder.py``: ``SUPPORTED_METRICS``): each stands for the collection entries
the toolkit reports for it, in its column order — ``em`` and the threshold measures as max, avg, adp
(``maxem avgem adpem``), the ``bi*`` measures binary and pooled over the dataset (``sample_based=False``). Its column
names (``maxfmeasure``, ``adpem``, ...) and ``tools/converter.py``'s (``maxF``, ``wFm``, ``SM``, case-insensitive)
name one entry. Given to ``--metric-names`` every name has the toolkit's meaning; given to ``--metrics``, a
collection name wins (``dice`` is the collection's binary Dice there, the toolkit's ``dice`` its max, avg, adp).

The names are the catalog's (``Descriptor.toolkit``), read when a name is translated. Importable without torch (the
argument parser uses it).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from nobg_metrics.cli.core.errors import ConfigError
from nobg_metrics.cli.core.ranks import prints_notes

MSIOU_NOTE = ("PySODEvalToolkit's 'msiou' calls PySODMetrics' MSIoU() without arguments, which PySODMetrics 1.6 "
              "refuses (older versions scored pred > 128 without the min-max stretch): here it is the current "
              "class's max, mean and adaptive (msiou_max msiou_mean msiou_adaptive)")

REFUSED: dict[str, str] = {
    "--record-txt": "every table is written into --out (table.md, one table per dataset; --combined adds "
                    "combined.md): give --out DIR",
    "--record-xlsx": "the workbook in PySODEvalToolkit's layout is --out/combined.xlsx: add --combined (or a --preset)",
    "--metric-npy": "the metric values are --out/results.json (raw values; per image: per_image.csv): give --out DIR",
    "--curves-npy": "the curves are --out/curves.npz (numpy.load, no pickle) and curves.csv: give --out DIR",
}
"""The toolkit's output-file flags: refused with what to use instead (the command writes one folder, atomically)."""


def toolkit_metrics() -> dict[str, tuple[str, ...]]:
    """Every PySODEvalToolkit name the command takes -> the collection entries it stands for, in the catalog's order:
    its metric names (``em``: max, mean, adaptive; ``bioa``: the pooled binary accuracy) and its result columns
    (``maxem``, ``avgfmeasure``; the converter's ``maxF``), from the catalog's ``Descriptor.toolkit`` (docs/cli.md's
    mapping table)."""
    # the catalog imports torch: toolkit names are translated after parsing, never by the argument parser
    from nobg_metrics.catalog import CATALOG

    names: dict[str, list[str]] = {}
    for entry in CATALOG.values():
        for name in entry.toolkit:
            names.setdefault(name, []).append(entry.name)
    return {name: tuple(entries) for name, entries in names.items()}


def toolkit_entries(name: str) -> tuple[str, ...] | None:
    """The collection entries a toolkit metric or column name stands for (``None``: not a toolkit name); a name
    given in another case is looked up in lower case as well (the converter's ``SM``, ``MAE``, ``wFm``).

    Examples:
        >>> toolkit_entries("em"), toolkit_entries("maxF"), toolkit_entries("bioa"), toolkit_entries("s_measure")
        (('e_measure_max', 'e_measure_mean', 'e_measure_adaptive'), ('f_measure_max',), ('accuracy_pooled',), None)
    """
    names = toolkit_metrics()
    return names.get(name) or names.get(name.lower())


def toolkit_names() -> list[str]:
    """Every toolkit metric and column name the command accepts (for the closest-name suggestions)."""
    return list(toolkit_metrics())


def translate(names: list[str], ours: tuple[str, ...] | list[str], toolkit_first: bool) -> tuple[list[str], list[str]]:
    """``(entries, notes)``: ``names`` with every toolkit name replaced by its entries (in order, each once). A name
    that is also a collection name keeps the collection's meaning unless ``toolkit_first`` (``--metric-names``).
    Unknown names are kept, for the command's check to name them.

    Examples:
        >>> translate(["sm", "mae", "dice", "em"], ["mae", "dice"], toolkit_first=False)[0]
        ['s_measure', 'mae', 'dice', 'e_measure_max', 'e_measure_mean', 'e_measure_adaptive']
        >>> translate(["dice"], ["mae", "dice"], toolkit_first=True)[0]
        ['dice_max', 'dice_mean', 'dice_adaptive']
    """
    entries: list[str] = []
    notes: list[str] = []
    for name in names:
        found = toolkit_entries(name)
        if found is None or (name in ours and not toolkit_first):
            entries.append(name)
            continue
        if found != (name,):
            notes.append(f"{name} = {' '.join(found)}")
        entries += found
    return list(dict.fromkeys(entries)), notes


class _Redirect(argparse.Action):
    """A toolkit flag with no meaning here: a usage error saying what to use instead (before torch loads)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        flag = self.option_strings[0]
        parser.error(f"{flag} (PySODEvalToolkit's flag) has no use here: {REFUSED[flag]}")


def _data_type(text: str) -> str:
    if text == "image":
        return text
    raise argparse.ArgumentTypeError(f"{text!r}: only 'image' (PySODEvalToolkit's default); its video metrics are not "
                                     "part of nobg-metrics: score the frames as images (--gt / --pred or a config)")


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """PySODEvalToolkit's ``eval.py`` flags on ``eval`` (module notes)."""
    group.add_argument("--metric-names", metavar="NAME", nargs="+", default=None,
                       help="PySODEvalToolkit's metric names (sm wfm mae fmeasure em precision recall iou dice f1 "
                            "specificity msiou bif1 biprecision birecall biiou bioa bikappa): the entries it reports "
                            "for each (em: e_measure_max/_mean/_adaptive); added to --metrics")
    group.add_argument("--num-bits", metavar="N", type=_bits, default=None,
                       help="PySODEvalToolkit's decimals: the same as --digits N (results.json stays raw)")
    group.add_argument("--num-workers", metavar="N", type=int, default=None,
                       help="PySODEvalToolkit's workers: the same as --workers N (decoding processes; the scoring "
                            "processes are --procs)")
    group.add_argument("--to-overwrite", action="store_true",
                       help="PySODEvalToolkit's flag: accepted; the outputs in --out are always replaced as a whole")
    group.add_argument("--data-type", type=_data_type, default="image", metavar="image",
                       help="PySODEvalToolkit's flag: only 'image'")
    for flag, use in REFUSED.items():
        group.add_argument(flag, metavar="FILE", action=_Redirect, help=f"PySODEvalToolkit's flag, refused: {use}")


def _bits(text: str) -> int:
    if text.isdigit() and int(text) <= 12:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected an integer 0..12, got {text!r}")


def apply_toolkit_flags(args: argparse.Namespace, ours: tuple[str, ...] | list[str]) -> None:
    """Turn the toolkit's flags and names on ``args`` into the command's own (``--metric-names`` and toolkit names
    in ``--metrics`` -> ``args.metrics``, ``--num-bits`` -> ``--digits``, ``--num-workers`` -> ``--workers``; a flag
    of the command given as well wins). Idempotent (ranks apply it again); notes on stderr from the first process."""
    notes: list[str] = []
    extra = getattr(args, "metric_names", None)
    if extra:
        translated, said = translate(list(extra), ours, toolkit_first=True)
        notes += said
        args.metrics = list(dict.fromkeys([*(args.metrics or []), *translated]))
        args.metric_names = None
    if getattr(args, "metrics", None):
        args.metrics, said = translate(list(args.metrics), ours, toolkit_first=False)
        notes += said
    if getattr(args, "num_bits", None) is not None:
        if getattr(args, "digits", None) is None:
            args.digits = args.num_bits
        args.num_bits = None
    if getattr(args, "num_workers", None) is not None:
        if args.num_workers < 0:
            raise ConfigError(f"--num-workers must be >= 0; got {args.num_workers}")
        if getattr(args, "workers", None) is None:
            args.workers = args.num_workers
        args.num_workers = None
    if notes and prints_notes():
        print(f"note: PySODEvalToolkit's metric names: {'; '.join(dict.fromkeys(notes))}", file=sys.stderr)
        if any(note.lower().startswith("msiou =") for note in notes):
            print(f"note: {MSIOU_NOTE}", file=sys.stderr)
