"""PR and F-threshold curves per dataset (one line per method) as curves.png and curves.pdf.

The curves are the dataset curves of the F-measure: the mean over images of the per-image precision,
recall and F curves at the 256 thresholds (PySODMetrics' aggregation, REFERENCES.md). Needs matplotlib
(the ``plot`` extra); without it the CLI says so and writes the other outputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nobg_metrics.cli.jobs import Job


def have_matplotlib() -> bool:
    """Whether the curves can be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def draw_curves(jobs: list[Job], curves: dict[int, dict[str, list[float]]], paths: list[Path]) -> None:
    """One row per dataset: precision-recall (left) and F against the threshold (right); saved to ``paths``.

    Args:
        jobs: the jobs, in plan order.
        curves: ``job index -> {"precision", "recall", "f_measure", "thresholds"}`` lists of equal length.
        paths: files to write (format from the extension: .png, .pdf).
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(job.dataset for job in jobs if job.index in curves))
    rows = max(len(datasets), 1)
    figure, axes = plt.subplots(rows, 2, figsize=(10, 4 * rows), squeeze=False)
    for row, dataset in enumerate(datasets):
        pr_axis, f_axis = axes[row]
        for job in jobs:
            if job.dataset != dataset or job.index not in curves:
                continue
            curve: dict[str, Any] = curves[job.index]
            pr_axis.plot(curve["recall"], curve["precision"], label=job.method, linewidth=1.5)
            thresholds = [float(t) * 255 if max(curve["thresholds"]) <= 1 else float(t) for t in curve["thresholds"]]
            f_axis.plot(thresholds, curve["f_measure"], label=job.method, linewidth=1.5)
        pr_axis.set(title=f"{dataset}: precision-recall", xlabel="recall", ylabel="precision", xlim=(0, 1),
                    ylim=(0, 1.02))
        f_axis.set(title=f"{dataset}: F-measure vs threshold", xlabel="threshold (0..255)", ylabel="F-measure",
                   xlim=(0, 255), ylim=(0, 1.02))
        for axis in (pr_axis, f_axis):
            axis.grid(True, alpha=0.3)
            axis.legend(loc="lower left", fontsize="small")
    if not datasets:
        axes[0][0].text(0.5, 0.5, "no curves", ha="center")
    figure.tight_layout()
    for path in paths:
        figure.savefig(path, format=path.suffix.lstrip("."), dpi=120)
    plt.close(figure)
