"""torchmetrics' own detection tests, run against this library's classes with only the imports swapped.

Run from the repository root (by hand, not by CI):

- ``python tools/peer_tests.py write`` copies torchmetrics' tests at the pinned tag out of a git clone
  (``--torchmetrics``; the COCO test data out of clones of faster_coco_eval and cocoapi) into ``tests/peer/``, swaps
  the imports of the metric classes and functions (nothing else), prints the diff of the swap and records the original
  files' sha256 in ``tests/peer/vendored.json``.
- ``python tools/peer_tests.py check`` verifies, offline, that undoing the swap gives back the recorded originals
  (``tests/peer/test_vendored.py`` checks the same in the fast tier); with a clone at hand it compares with it too.
- ``python tools/peer_tests.py run [--target ours|torchmetrics] [--raw] [pytest args]`` runs the slow-tier peer tests
  and prints passed / failed / xfailed / skipped per file and the time taken. ``--target torchmetrics`` runs a temporary
  copy with the swap undone (torchmetrics' own classes), the baseline the same harness gives upstream; ``--raw`` (and
  ``--target torchmetrics``) leaves out ``tests/peer/expected_failures.txt``, whose tests otherwise are strict xfails.
- ``python tools/peer_tests.py run --held-out v1.6.0 [--target ...]``: the held-out check. The detection test files of
  another release (never vendored, never read while fixing differences) replace the vendored ones in a temporary
  copy, with the same swap; run raw, on ours and on torchmetrics, the pass rates should agree with the pinned release's.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT / "tests" / "peer"
MANIFEST = PEER / "vendored.json"
TAG = "v1.9.0"
MIRRORS = Path("/work/.mirror")

# torchmetrics' files: (path in torchmetrics at TAG, path under tests/peer); tests/unittests/__init__.py is not
# vendored (it needs cachier and a process pool): tests/peer/unittests/__init__.py provides the names used instead.
VENDORED = [
    ("LICENSE", "unittests/LICENSE"),
    ("tests/unittests/_helpers/__init__.py", "unittests/_helpers/__init__.py"),
    ("tests/unittests/_helpers/wrappers.py", "unittests/_helpers/wrappers.py"),
    ("tests/unittests/_helpers/testers.py", "unittests/_helpers/testers.py"),
    ("tests/unittests/detection/__init__.py", "unittests/detection/__init__.py"),
    ("tests/unittests/detection/test_map.py", "unittests/detection/test_map.py"),
    ("tests/unittests/detection/test_panoptic_quality.py", "unittests/detection/test_panoptic_quality.py"),
    (
        "tests/unittests/detection/test_modified_panoptic_quality.py",
        "unittests/detection/test_modified_panoptic_quality.py",
    ),
]
# whole lines, torchmetrics' import -> ours
SWAPS = [
    (
        "from torchmetrics.detection.mean_ap import MeanAveragePrecision",
        "from nobg_metrics import MeanAveragePrecision",
    ),
    (
        "from torchmetrics.functional.detection.map import mean_average_precision",
        "from nobg_metrics.functional import mean_average_precision",
    ),
    (
        "from torchmetrics.detection.panoptic_qualities import PanopticQuality",
        "from nobg_metrics import PanopticQuality",
    ),
    (
        "from torchmetrics.functional.detection.panoptic_qualities import panoptic_quality",
        "from nobg_metrics.functional import panoptic_quality",
    ),
    ("from torchmetrics.detection import ModifiedPanopticQuality", "from nobg_metrics import ModifiedPanopticQuality"),
    (
        "from torchmetrics.functional.detection import modified_panoptic_quality",
        "from nobg_metrics.functional import modified_panoptic_quality",
    ),
]
# the COCO val2014 test data torchmetrics' tests read: (repository, path there, path under tests/peer)
DATA = [
    (
        "MiXaiLL76/faster_coco_eval",
        "tests/dataset/cocoapi/instances_val2014_100.json",
        "_data/detection/instances_val2014_100.json",
    ),
    (
        "cocodataset/cocoapi",
        "results/instances_val2014_fakebbox100_results.json",
        "_data/detection/instances_val2014_fakebbox100_results.json",
    ),
    (
        "cocodataset/cocoapi",
        "results/instances_val2014_fakesegm100_results.json",
        "_data/detection/instances_val2014_fakesegm100_results.json",
    ),
]


def swap(text: str, reverse: bool = False) -> str:
    """``text`` with each swapped import line replaced (``reverse``: ours back to torchmetrics')."""
    table = {new: old for old, new in SWAPS} if reverse else dict(SWAPS)
    lines = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        lines.append(table.get(body, body) + line[len(body) :])
    return "".join(lines)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def _mirror(name: str) -> Path:
    return MIRRORS / name.replace("/", "+") / "repo"


def write(torchmetrics: Path) -> None:
    """Vendor the files at TAG with the swap applied and the data; print the swap's diff; write the manifest."""
    commit = _git(torchmetrics, "rev-parse", f"{TAG}^{{commit}}").decode().strip()
    files = {}
    for source, dest in VENDORED:
        original = _git(torchmetrics, "show", f"{TAG}:{source}").decode()
        swapped = swap(original)
        (PEER / dest).parent.mkdir(parents=True, exist_ok=True)
        (PEER / dest).write_text(swapped)
        files[dest] = {"source": source, "sha256_original": sha256(original.encode())}
        sys.stdout.writelines(difflib.unified_diff(original.splitlines(True), swapped.splitlines(True), source, dest))
    data = {}
    for repo_name, source, dest in DATA:
        repo = _mirror(repo_name)
        blob_commit = _git(repo, "log", "-1", "--format=%H", "--", source).decode().strip()
        blob = _git(repo, "show", f"{blob_commit}:{source}")
        (PEER / dest).parent.mkdir(parents=True, exist_ok=True)
        (PEER / dest).write_bytes(blob)
        data[dest] = {"repository": repo_name, "source": source, "commit": blob_commit, "sha256": sha256(blob)}
    manifest = {"torchmetrics": TAG, "commit": commit, "swaps": SWAPS, "files": files, "data": data}
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")


def check(torchmetrics: Path | None) -> list[str]:
    """Problems found: a vendored file that is not its recorded original with the swap applied, or changed data."""
    manifest = json.loads(MANIFEST.read_text())
    problems = []
    for dest, entry in manifest["files"].items():
        text = (PEER / dest).read_text()
        if sha256(swap(text, reverse=True).encode()) != entry["sha256_original"]:
            problems.append(f"{dest}: differs from {manifest['torchmetrics']}:{entry['source']} by more than the swap")
        if torchmetrics is not None:
            original = _git(torchmetrics, "show", f"{manifest['torchmetrics']}:{entry['source']}").decode()
            if swap(original) != text:
                problems.append(f"{dest}: differs from the clone's {entry['source']} with the swap applied")
    for dest, entry in manifest["data"].items():
        if sha256((PEER / dest).read_bytes()) != entry["sha256"]:
            problems.append(f"{dest}: differs from {entry['repository']}@{entry['commit']}:{entry['source']}")
    return problems


def _summary(junit: Path) -> dict[str, Counter]:
    """Outcome counts per test file from a junit report (a collection error counts once, as ``error``)."""
    counts: dict[str, Counter] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("classname", "").split(".")
        module = next((part for part in name if part.startswith("test_")), ".".join(name))
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error"}.get(child.tag, "skipped")
                outcome = "xfailed" if child.get("type") == "pytest.xfail" else outcome
                break
        counts.setdefault(module, Counter())[outcome] += 1
    return counts


def _held_out(where: Path, tag: str, torchmetrics: Path) -> None:
    """Replace the copy's vendored detection test files by ``tag``'s, with the swap applied."""
    for source, dest in VENDORED:
        if "/detection/test_" in source:
            (where / dest).write_text(swap(_git(torchmetrics, "show", f"{tag}:{source}").decode()))


def run(target: str, raw: bool, pytest_args: list[str], held_out: str | None = None) -> int:
    """Run the peer tests on ``target`` ('ours' or 'torchmetrics'); print counts per file and the time taken.

    ``raw`` (always for torchmetrics): without ``expected_failures.txt``, each test passes or fails as it is.
    """
    with tempfile.TemporaryDirectory() as tmp:
        where = PEER
        if raw or target == "torchmetrics" or held_out:
            where = Path(tmp) / "peer"
            shutil.copytree(PEER, where)
            (where / "expected_failures.txt").unlink(missing_ok=True)
        if held_out:
            _held_out(where, held_out, _mirror("Lightning-AI/torchmetrics"))
        if target == "torchmetrics":
            for dest in json.loads(MANIFEST.read_text())["files"]:
                (where / dest).write_text(swap((where / dest).read_text(), reverse=True))
        junit = Path(tmp) / "junit.xml"
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-m",
            "slow",
            "-p",
            "no:randomly",
            f"--junitxml={junit}",
            "-c",
            str(ROOT / "pyproject.toml"),
            "--rootdir",
            str(ROOT),
            str(where / "unittests"),
            *pytest_args,
        ]
        start = time.perf_counter()
        code = subprocess.run(command, cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": "0"}).returncode
        elapsed = time.perf_counter() - start
        if junit.exists():
            for module, counts in sorted(_summary(junit).items()):
                print(f"{target}: {module}: " + ", ".join(f"{counts[k]} {k}" for k in sorted(counts)))
        print(f"{target}: {elapsed:.0f} s")
        return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("write", "check"):
        sub.add_parser(name).add_argument("--torchmetrics", type=Path, default=_mirror("Lightning-AI/torchmetrics"))
    runner = sub.add_parser("run")
    runner.add_argument("--target", choices=("ours", "torchmetrics"), default="ours")
    runner.add_argument("--raw", action="store_true", help="ignore tests/peer/expected_failures.txt")
    runner.add_argument("--held-out", metavar="TAG", help="another torchmetrics release's detection tests (raw)")
    args, rest = parser.parse_known_args(argv)
    if args.command == "write":
        write(args.torchmetrics)
        return 0
    if args.command == "check":
        problems = check(args.torchmetrics if args.torchmetrics.exists() else None)
        print(
            "\n".join(problems) or "the vendored files are torchmetrics' with the imports swapped, the data unchanged"
        )
        return int(bool(problems))
    return run(args.target, args.raw, rest, args.held_out)


if __name__ == "__main__":
    sys.exit(main())
