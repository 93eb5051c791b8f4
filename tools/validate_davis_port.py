"""Check tests/reference/davis_port.py (and nobg_metrics) against the real davis2017-evaluation code.

The real code is not a dependency: unpack it outside the repository and point ``DAVIS2017_EVALUATION`` at it::

    mkdir -p /tmp/ref/davis && git -C <davis2017-evaluation clone> archive HEAD | tar -x -C /tmp/ref/davis
    DAVIS2017_EVALUATION=/tmp/ref/davis python tools/validate_davis_port.py

(it needs numpy, opencv, scikit-image, scipy, tqdm and Pillow, as the reference does). Three checks, each printing
its largest difference: per-frame J and F (``db_eval_iou``, ``db_eval_boundary``) on random masks with and
without void, against the port and against ``nobg_metrics.functional.davis_region_similarity`` /
``davis_contour_accuracy``; ``db_statistics`` for sequence lengths 1 .. 600 against the port and
``davis_statistics(decay_index="reference")``; and ``DAVISEvaluation(...).evaluate`` on the generated sequences of
tests/helpers/davis_data.py against the port's protocol and ``DavisJAndF`` fed object by object; and, when pandas
can be imported (``PYTHONPATH``), the reference's ``evaluation_method.py`` against ``nobg-metrics eval --preset
davis``: both CSVs byte for byte and the printed tables line for line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), os.environ["DAVIS2017_EVALUATION"]]

from davis2017 import utils as real_utils
from davis2017.evaluation import DAVISEvaluation
from davis2017.metrics import db_eval_boundary, db_eval_iou

import nobg_metrics as nm
from nobg_metrics import functional as F
from tests.helpers.davis_data import write_davis
from tests.reference import davis_port


def _frames(rng: np.random.Generator, count: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(pred, gt, void) bool triples: random sizes (1xN, Nx1, 854x480 ...), blobs, noise, empty and full masks."""
    shapes = [(1, 17), (17, 1), (2, 3), (5, 5), (37, 53), (64, 48), (480, 854), (130, 67)]
    out = []
    for index in range(count):
        h, w = shapes[index % len(shapes)]
        yy, xx = np.mgrid[0:h, 0:w]
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        ry, rx = rng.uniform(0.1, 0.6) * h + 0.5, rng.uniform(0.1, 0.6) * w + 0.5
        gt = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
        kind = index % 5
        pred = (np.roll(gt, (int(rng.integers(-3, 4)), int(rng.integers(-5, 6))), axis=(0, 1))
                ^ (rng.random((h, w)) < 0.01))
        if kind == 1:
            pred = np.zeros_like(gt)
        elif kind == 2:
            gt = np.zeros_like(gt)
        elif kind == 3:
            pred = np.ones_like(gt)
        void = rng.random((h, w)) < 0.05 if index % 2 else np.zeros_like(gt)
        out.append((pred, gt, void))
    return out


def check_frames() -> None:
    rng = np.random.default_rng(0)
    worst = {"port J": 0.0, "port F": 0.0, "ours J": 0.0, "ours F": 0.0}
    for pred, gt, void in _frames(rng, 160):
        real_j = float(db_eval_iou(gt, pred, void))
        real_f = float(db_eval_boundary(gt, pred, void))
        port_j, port_f = davis_port.region_similarity(gt, pred, void), davis_port.contour_accuracy(pred, gt, void)
        p, g, v = (torch.from_numpy(x) for x in (pred, gt, void))
        ours_j = F.davis_region_similarity(p, g, v).item()
        ours_f = F.davis_contour_accuracy(p, g, v).item()
        for name, value, real in (("port J", port_j, real_j), ("port F", port_f, real_f), ("ours J", ours_j, real_j),
                                  ("ours F", ours_f, real_f)):
            worst[name] = max(worst[name], abs(value - real))
    print("per frame, 160 frames, max |diff|:", worst)


def check_statistics() -> None:
    rng = np.random.default_rng(1)
    worst_port = worst_ours = 0.0
    nan_agree = True
    for length in range(1, 601):
        values = rng.random(length)
        real = np.array(real_utils.db_statistics(values), dtype=np.float64)
        port = np.array(davis_port.sequence_statistics(values))
        ours = np.array([t.item() for t in F.davis_statistics(torch.from_numpy(values), decay_index="reference")])
        nan_agree &= bool((np.isnan(real) == np.isnan(port)).all() and (np.isnan(real) == np.isnan(ours)).all())
        finite = ~np.isnan(real)
        worst_port = max(worst_port, float(np.abs(port - real)[finite].max(initial=0.0)))
        worst_ours = max(worst_ours, float(np.abs(ours - real)[finite].max(initial=0.0)))
    print(f"db_statistics, lengths 1..600: max |diff| port {worst_port:.3g}, ours {worst_ours:.3g}; NaNs agree: "
          f"{nan_agree}")


def check_protocol() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folders = write_davis(Path(tmp))
        davis = folders["davis"]
        sequences = (davis / "ImageSets" / "2017" / "val.txt").read_text().split()
        for method in ("shifted", "missing", "perfect"):
            evaluation = DAVISEvaluation(str(davis), "semi-supervised", "val", codalab=True)
            real = evaluation.evaluate(str(folders[method]))
            port = davis_port.evaluate_semisupervised(str(davis / "Annotations" / "480p"), str(folders[method]),
                                                      sequences)
            names = list(real["J"]["M_per_object"])
            assert names == list(port["per_object"]), (names, list(port["per_object"]))
            real_rows = np.array([[real[m][s][i] for m in "JF" for s in "MRD"] for i in range(len(names))])
            port_rows = np.array(list(port["per_object"].values()))
            metric = nm.DavisJAndF(decay_index="reference")  # the long sequence's wrapped bins, as the reference
            for name in port["objects"]:
                seq, obj = name.rsplit("_", 1)
                ids = sorted(os.listdir(davis / "Annotations" / "480p" / seq))[1:-1]
                gts, preds = [], []
                for frame in ids:
                    labels = davis_port.read_labels(str(davis / "Annotations" / "480p" / seq / frame))
                    result = davis_port.read_labels(str(folders[method] / seq / frame))
                    gts.append(torch.from_numpy(labels == int(obj)))
                    preds.append(torch.from_numpy(result == int(obj)))
                metric.update(torch.stack(preds), torch.stack(gts), sequence=name)
            table = metric.per_sequence()
            ours_rows = np.array([[table[key][row] for key in ("J-Mean", "J-Recall", "J-Decay", "F-Mean", "F-Recall",
                                                                 "F-Decay")] for row in range(len(names))])
            order = [table["sequence"].index(name) for name in names]
            real_global = [np.mean(real["J"]["M"]) / 2 + np.mean(real["F"]["M"]) / 2]
            ours_global = [metric.compute().item()]
            print(f"{method}: {len(names)} objects, max |diff| per object: port {_diff(port_rows, real_rows)}, ours "
                  f"{_diff(ours_rows[order], real_rows)}; J&F-Mean: real {real_global[0]:.6f}, "
                  f"ours {ours_global[0]:.6f}")


def _diff(ours: np.ndarray, real: np.ndarray) -> str:
    """The largest difference where the reference is finite; whether the NaNs (its wrapped decay bins) agree."""
    same_nans = bool((np.isnan(ours) == np.isnan(real)).all())
    finite = ~np.isnan(real)
    agreement = "agree" if same_nans else "DIFFER"
    return f"{np.abs(ours - real)[finite].max():.3g} (NaNs {agreement}: {int((~finite).sum())})"


def _tables(text: str) -> list[str]:
    """The lines of the printed global and per-sequence tables (from the first dashed header to the end)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("------"))
    return [line for line in lines[start:] if line.strip() and not line.startswith("Total time")]


def _with_images(davis: Path) -> None:
    """Dummy JPEGImages/480p frames (the reference lists a sequence's frames there; it never reads them)."""
    from PIL import Image

    annotations = davis / "Annotations" / "480p"
    for seq in os.listdir(annotations):
        (davis / "JPEGImages" / "480p" / seq).mkdir(parents=True, exist_ok=True)
        for name in os.listdir(annotations / seq):
            Image.new("RGB", (2, 2)).save(davis / "JPEGImages" / "480p" / seq / f"{name[:-4]}.jpg")


def _compare_command(tmp: Path, davis: Path, methods: dict[str, Path], label: str) -> None:
    """The reference's evaluation_method.py against ``nobg-metrics eval --preset davis``: CSV bytes, printed
    tables, and every per-object number of results.json against the reference's own ``evaluate``."""
    _with_images(davis)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.environ["DAVIS2017_EVALUATION"], str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")])}
    out = tmp / "out"
    ours = subprocess.run([sys.executable, "-m", "nobg_metrics", "eval", "--preset", "davis", "--gt", str(davis),
                           "--pred", *(f"{m}={f}" for m, f in methods.items()), "--out", str(out), "--device", "cpu"],
                          env=env, capture_output=True, text=True, check=True).stdout
    document = json.loads((out / "results.json").read_text())
    names = list(methods)
    for index, (method, folder) in enumerate(methods.items()):
        block = ours.split(f"{method}:\n", 1)[1]
        if index + 1 < len(names):  # up to the next method's header line
            block = block.split(f"\n{names[index + 1]}:\n", 1)[0]
        results = tmp / "reference" / method
        shutil.copytree(folder, results)
        real = subprocess.run([sys.executable, "evaluation_method.py", "--task", "semi-supervised", "--results_path",
                               str(results), "--davis_path", str(davis)], env=env,
                              cwd=os.environ["DAVIS2017_EVALUATION"], capture_output=True, text=True, check=True).stdout
        same_csv = all((results / name).read_bytes() == (out / method / name).read_bytes()
                       for name in ("global_results-val.csv", "per-sequence_results-val.csv"))
        evaluated = DAVISEvaluation(str(davis), "semi-supervised", "val").evaluate(str(folder))
        per_object = next(r for r in document["results"] if r["method"] == method)["per_object"]
        worst, nans = 0.0, 0
        for row, name in enumerate(evaluated["J"]["M_per_object"]):
            for key in ("J", "F"):
                for stat, label_ in zip("MRD", ("Mean", "Recall", "Decay")):
                    real_value, value = evaluated[key][stat][row], per_object[name][f"{key}-{label_}"]
                    if np.isnan(real_value):
                        nans += value is None
                    else:
                        worst = max(worst, abs(value - real_value))
        print(f"command on {label}, {method}: {len(per_object)} objects, max |diff| {worst:.3g} ({nans} NaN decays "
              f"alike); CSVs byte-identical: {same_csv}; printed tables identical: {_tables(real) == _tables(block)}")


def check_command() -> None:
    try:
        import pandas  # noqa: F401  (evaluation_method.py needs it)
    except ImportError:
        print("command: skipped (pandas is not importable; add it to PYTHONPATH)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        folders = write_davis(Path(tmp), methods=("shifted", "missing"))
        _compare_command(Path(tmp), folders["davis"], {m: folders[m] for m in ("shifted", "missing")},
                         "generated sequences")
    results = Path(os.environ["DAVIS2017_EVALUATION"]) / "results"
    if not (results / "semi-supervised" / "osvos").is_dir():
        print("real masks: skipped (unpack the reference's results/ folder beside davis2017/)")
        return
    from tests.helpers.davis_data import save_ids

    with tempfile.TemporaryDirectory() as tmp:  # OSVOS's masks as the gt, RVOS's (ids above the count cut) as results
        davis, rvos = Path(tmp) / "DAVIS", Path(tmp) / "rvos"
        names = sorted(os.listdir(results / "semi-supervised" / "osvos"))
        (davis / "ImageSets" / "2017").mkdir(parents=True)
        (davis / "ImageSets" / "2017" / "val.txt").write_text("".join(f"{n}\n" for n in names))
        for name in names:
            shutil.copytree(results / "semi-supervised" / "osvos" / name, davis / "Annotations" / "480p" / name)
            frames = sorted(os.listdir(davis / "Annotations" / "480p" / name))
            count = int(davis_port.read_labels(str(davis / "Annotations" / "480p" / name / frames[0])).max())
            (rvos / name).mkdir(parents=True)
            for frame in frames:
                ids = davis_port.read_labels(str(results / "unsupervised" / "rvos" / name / frame))
                save_ids(np.where(ids > count, 0, ids).astype(np.uint8), rvos / name / frame)
        _compare_command(Path(tmp), davis, {"rvos": rvos}, "real masks (30 DAVIS 2017 val sequences)")


if __name__ == "__main__":
    torch.set_num_threads(1)
    check_frames()
    check_statistics()
    check_protocol()
    check_command()
