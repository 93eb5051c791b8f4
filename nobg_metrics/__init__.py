"""nobg_metrics: exact, GPU-resident, DDP-synced metrics for salient/dichotomous object segmentation,
background removal and alpha matting.

>>> import torch, nobg_metrics as nm
>>> nm.functional.mae(torch.zeros(1, 1, 4, 4), torch.zeros(1, 1, 4, 4))
tensor(0., dtype=torch.float64)
"""

from nobg_metrics import functional
from nobg_metrics.allocator import tune_cpu_allocator
from nobg_metrics.collection import make_collection
from nobg_metrics.metrics import *
from nobg_metrics.metrics import __all__ as _metric_names
from nobg_metrics.ops import arith as _arith  # noqa: F401  (its import warms torch's vector math: see there)

__version__ = "0.1.0"

__all__ = ["__version__", "functional", "make_collection", "tune_cpu_allocator", *_metric_names]
