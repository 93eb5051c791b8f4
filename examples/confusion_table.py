"""A PySODEvalToolkit-style table of the confusion family for two methods, from the bundled sample PNGs.

    python examples/confusion_table.py               # prints the table; --plot OUT.png draws PR and ROC curves

Every column is one entry of ``nobg_metrics.collection.FAMILY`` scored with PySODMetrics' protocol
(``normalize=True, empty_gt="reference"``: the PNG bytes as ``FmeasureV2.step`` reads them), all of them from one
statistics pass per image. See docs/confusion_family.md for the mapping to PySODMetrics' handlers.
"""

from __future__ import annotations

import argparse
import pathlib

import numpy as np
import torch
from PIL import Image

import nobg_metrics as nm

SAMPLE = pathlib.Path(nm.__file__).parent / "data" / "sample"
COLUMNS = ("f_measure_max", "f_measure_mean", "f_measure_adaptive", "precision_max", "recall_max", "specificity_mean",
           "iou_max", "dice_mean", "f1_pooled", "kappa_pooled", "accuracy_pooled", "ber", "pr_auc", "roc_auc")


def read_grey(path: pathlib.Path) -> torch.Tensor:
    """An 8-bit grey PNG as a (H, W) uint8 tensor."""
    return torch.from_numpy(np.array(Image.open(path).convert("L")))


def score(method: pathlib.Path, gt_folder: pathlib.Path) -> dict[str, float]:
    """The family's dataset values of one method folder (predictions matched to the gts by file name)."""
    collection = nm.make_collection(metrics=COLUMNS, normalize=True, empty_gt="reference")
    for gt_path in sorted(gt_folder.glob("*.png")):
        collection.update([read_grey(method / gt_path.name)], [read_grey(gt_path)])  # lists: sizes may differ
    return {name: float(value) for name, value in collection.compute().items()}, collection


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plot", type=pathlib.Path, default=None, help="write PR and ROC curves here (matplotlib)")
    args = parser.parse_args()
    rows, collections = {}, {}
    for method in ("methodA", "methodB"):
        rows[method], collections[method] = score(SAMPLE / method, SAMPLE / "gt")
    print("| method | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---:|" * len(COLUMNS))
    for method, values in rows.items():
        print(f"| {method} | " + " | ".join(f"{values[name]:.4f}" for name in COLUMNS) + " |")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure, axes = plt.subplots(1, 2, figsize=(10, 4))
        for method, collection in collections.items():
            collection["pr_auc"].plot(ax=axes[0])
            collection["roc_auc"].plot(ax=axes[1])
            axes[0].lines[-1].set_label(method)
            axes[1].lines[-1].set_label(method)
        for ax in axes:
            ax.legend()
        figure.savefig(args.plot)
        print(f"curves: {args.plot}")


if __name__ == "__main__":
    main()
