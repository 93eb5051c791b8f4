"""nobg_metrics: exact, GPU-resident, DDP-synced metrics for salient/dichotomous object segmentation,
background removal and alpha matting.

The package loads on first use of any of its names (``nm.MAE``, ``nm.functional``, ``nm.make_collection``): a
bare ``import nobg_metrics`` does not import torch, so the ``nobg-metrics`` command can install its signal
handlers (a Ctrl-C while torch loads exits quietly) and print its help before paying for torch.

>>> import torch, nobg_metrics as nm
>>> nm.functional.mae(torch.zeros(1, 1, 4, 4), torch.zeros(1, 1, 4, 4))
tensor(0., dtype=torch.float64)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nobg_metrics._version import __version__ as __version__

# The names below are written by tools/exports.py from nobg_metrics.metrics' list; do not edit by hand.
__all__ = [
    "BER",
    "F1",
    "FPR",
    "HCE",
    "MAE",
    "MBA",
    "MSE",
    "P3MMAD",
    "P3MMSE",
    "P3MSAD",
    "PRAUC",
    "ROCAUC",
    "SAD",
    "Accuracy",
    "BinarisedGtMSE",
    "BoundaryFMeasure",
    "BoundaryIoU",
    "CamouflageContextMeasure",
    "CityscapesInstanceAP",
    "ConfusionMetric",
    "ConnectivityError",
    "ContextMeasure",
    "DavisF",
    "DavisJ",
    "DavisJAndF",
    "Dice",
    "EMeasure",
    "FMeasure",
    "GradientError",
    "GreyBoundaryIoU",
    "HQSAMBoundaryIoU",
    "HQSAMIoU",
    "IoU",
    "Kappa",
    "MSIoU",
    "MeanAveragePrecision",
    "ModifiedPanopticQuality",
    "P3MConnectivityError",
    "P3MGradientError",
    "PanopticQuality",
    "Precision",
    "Recall",
    "SMeasure",
    "SizeInvariant",
    "SizeInvariantConfusion",
    "SizeInvariantMAE",
    "Specificity",
    "TrimapIoU",
    "WeightedFMeasure",
    "__version__",
    "functional",
    "make_collection",
    "tune_cpu_allocator",
]
"""The package's names: what :func:`_load` binds on first use (``tests/test_package_lists.py`` checks the two agree;
a class added with ``catalog.register`` joins the loaded list too)."""

if TYPE_CHECKING:  # the lazy names as static tools (mypy, IDEs) should see them: the objects _load() binds
    from nobg_metrics import functional as functional
    from nobg_metrics.allocator import tune_cpu_allocator as tune_cpu_allocator
    from nobg_metrics.collection import make_collection as make_collection
    from nobg_metrics.metrics import (  # the classes (metrics.__all__, written by tools/exports.py)
        BER,
        F1,
        FPR,
        HCE,
        MAE,
        MBA,
        MSE,
        P3MMAD,
        P3MMSE,
        P3MSAD,
        PRAUC,
        ROCAUC,
        SAD,
        Accuracy,
        BinarisedGtMSE,
        BoundaryFMeasure,
        BoundaryIoU,
        CamouflageContextMeasure,
        CityscapesInstanceAP,
        ConfusionMetric,
        ConnectivityError,
        ContextMeasure,
        DavisF,
        DavisJ,
        DavisJAndF,
        Dice,
        EMeasure,
        FMeasure,
        GradientError,
        GreyBoundaryIoU,
        HQSAMBoundaryIoU,
        HQSAMIoU,
        IoU,
        Kappa,
        MeanAveragePrecision,
        ModifiedPanopticQuality,
        MSIoU,
        P3MConnectivityError,
        P3MGradientError,
        PanopticQuality,
        Precision,
        Recall,
        SizeInvariant,
        SizeInvariantConfusion,
        SizeInvariantMAE,
        SMeasure,
        Specificity,
        TrimapIoU,
        WeightedFMeasure,
    )
# (end of the names written by tools/exports.py)


def _load() -> dict[str, Any]:
    """Import the public API (functional, metrics, collections) into the package namespace on first access."""
    functional = importlib.import_module("nobg_metrics.functional")  # (not ``from nobg_metrics import``: that
    metrics = importlib.import_module("nobg_metrics.metrics")  # would ask this module's __getattr__ again)
    tune_cpu_allocator = importlib.import_module("nobg_metrics.allocator").tune_cpu_allocator
    make_collection = importlib.import_module("nobg_metrics.collection").make_collection
    catalog = importlib.import_module("nobg_metrics.catalog").CATALOG
    importlib.import_module("nobg_metrics.ops.arith")  # its import warms torch's vector math: see there

    names = {"functional": functional, "make_collection": make_collection, "tune_cpu_allocator": tune_cpu_allocator}
    names.update({name: getattr(metrics, name) for name in metrics.__all__})
    names.update({entry.metric.__name__: entry.metric for entry in catalog.values()})  # and every registered class
    classes = sorted(name for name in names if name not in ("functional", "make_collection", "tune_cpu_allocator"))
    names["__all__"] = ["__version__", "functional", "make_collection", "tune_cpu_allocator", *classes]
    globals().update(names)
    return names


def __getattr__(name: str) -> Any:
    if name.startswith("__") and name != "__all__":
        raise AttributeError(f"module 'nobg_metrics' has no attribute {name!r}")
    names = _load()
    if name not in names:
        raise AttributeError(f"module 'nobg_metrics' has no attribute {name!r}")
    return names[name]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_load()))
