"""The held-out check of the drop-in: torchmetrics' own docstring examples for its detection metrics, on ours.

``tools/peer_tests.py`` runs torchmetrics' detection test files, which were read while the differences were fixed.
These examples were not: they are the outputs torchmetrics documents for ``MeanAveragePrecision``,
``PanopticQuality``, ``ModifiedPanopticQuality`` and their functional forms, at the pinned release. Each docstring
runs as torchmetrics' own doctest run runs it (its own namespace with ``torch`` and ``tensor``, seed 42 reset
first), with the imports swapped to ours and nothing else; plotting examples are left out (they draw, they do not
print values). Run from the repository root, by hand (it needs the torchmetrics clone):

    python tools/peer_doctests.py                 # ours
    python tools/peer_doctests.py --verbose       # and each failing example's expected / got

An example passes when its printed output equals the documented one. Where it does not, the output is also compared
value by value (every number to the printed precision, the text between numbers equal, ``dtype=torch.float64``
dropped): "equal values, float64" then names our one documented difference in how values print.
"""

from __future__ import annotations

import argparse
import doctest
import importlib
import os
import random
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_tests import TAG, _git, _mirror  # the tools folder is not a package: its own path, put first above

SOURCES = [
    "src/torchmetrics/detection/mean_ap.py",
    "src/torchmetrics/detection/panoptic_qualities.py",
    "src/torchmetrics/functional/detection/map.py",
    "src/torchmetrics/functional/detection/panoptic_qualities.py",
]
SWAPS = {
    "from torchmetrics.detection import MeanAveragePrecision": "from nobg_metrics import MeanAveragePrecision",
    "from torchmetrics.detection.mean_ap import MeanAveragePrecision": "from nobg_metrics import MeanAveragePrecision",
    "from torchmetrics.detection import PanopticQuality": "from nobg_metrics import PanopticQuality",
    "from torchmetrics.detection import ModifiedPanopticQuality": "from nobg_metrics import ModifiedPanopticQuality",
    "from torchmetrics.functional.detection.map import mean_average_precision":
        "from nobg_metrics.functional import mean_average_precision",
}
# A docstring's examples see its module's globals: the functional panoptic module's examples call the functions it
# defines, swapped here for ours as its import would be.
MODULE_NAMES = {"src/torchmetrics/functional/detection/panoptic_qualities.py": ("panoptic_quality",
                                                                              "modified_panoptic_quality")}
NUMBER = re.compile(r"-?\d+\.?\d*(?:e[-+]?\d+)?")


def _same_values(want: str, got: str) -> bool:
    """Equal numbers to the printed precision, the text between them equal, the float64 dtype note dropped."""
    want, got = (re.sub(r",\s*dtype=torch\.float64", "", text) for text in (want, got))
    want_numbers, got_numbers = NUMBER.findall(want), NUMBER.findall(got)
    if NUMBER.sub("#", want).split() != NUMBER.sub("#", got).split() or len(want_numbers) != len(got_numbers):
        return False
    return all(abs(float(a) - float(b)) <= 1.5e-4 for a, b in zip(want_numbers, got_numbers))


class _ValueChecker(doctest.OutputChecker):
    float64_only = 0

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        if super().check_output(want, got, optionflags):
            return True
        same = _same_values(want, got)
        self.float64_only += same
        return same


def _docstrings(text: str) -> list[tuple[int, str]]:
    """(line, docstring) of every triple-quoted block with examples."""
    return [(text[: m.start()].count("\n") + 1, m.group(1)) for m in re.finditer(r'"""(.*?)"""', text, re.S)
            if ">>>" in m.group(1)]


def run(verbose: bool) -> int:
    repo = _mirror("Lightning-AI/torchmetrics")
    totals = {"examples": 0, "failed": 0, "docstrings": 0, "failed docstrings": 0}
    checker = _ValueChecker()
    for source in SOURCES:
        text = _git(repo, "show", f"{TAG}:{source}").decode()
        names = {"torch": torch, "tensor": torch.tensor}
        for name in MODULE_NAMES.get(source, ()):
            names[name] = getattr(importlib.import_module("nobg_metrics.functional"), name)
        for line, doc in _docstrings(text):
            if "fig_" in doc:  # a plot() example: it draws, prints nothing to compare
                continue
            for old, new in SWAPS.items():
                doc = doc.replace(old, new)
            name = f"{source}:{line}"
            test = doctest.DocTestParser().get_doctest(doc, dict(names), name, source, line)
            random.seed(42)
            np.random.seed(42)
            torch.manual_seed(42)
            runner = doctest.DocTestRunner(checker=checker, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
            report: list[str] = []
            result = runner.run(test, out=report.append)
            totals["examples"] += result.attempted
            totals["failed"] += result.failed
            totals["docstrings"] += 1
            totals["failed docstrings"] += bool(result.failed)
            print(f"{'FAILED' if result.failed else 'ok    '} {name} ({result.attempted - result.failed} / "
                  f"{result.attempted} examples)")
            if result.failed and verbose:
                print("".join(report))
    print(f"torchmetrics {TAG} docstring examples on ours: {totals['examples'] - totals['failed']} / "
          f"{totals['examples']} examples pass ({checker.float64_only} of them with equal values printed as float64); "
          f"{totals['docstrings'] - totals['failed docstrings']} / {totals['docstrings']} docstrings")
    return int(bool(totals["failed"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="print each failing example")
    verbose = parser.parse_args(argv).verbose
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:  # the tm_to_coco example writes its JSON files to the cwd
        os.chdir(folder)
        try:
            return run(verbose)
        finally:
            os.chdir(here)


if __name__ == "__main__":
    sys.exit(main())
