"""docs/adding_a_metric.md's example, run: its functional module and its catalog entry are all a new per-image
metric needs — the class, a collection, the value against a NumPy reference and the shared tester follow."""

from __future__ import annotations

import doctest
import re
import sys
import types
from pathlib import Path

import numpy as np
import torch

import nobg_metrics.catalog as catalog
from nobg_metrics.collection import make_collection
from nobg_metrics.metrics.per_image import per_image_metric
from tests.helpers.tester import check_metric

DOC = Path(__file__).resolve().parents[1] / "docs" / "adding_a_metric.md"


def _functional_module() -> types.ModuleType:
    block = re.search(r"### 1\. .*?```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    module = types.ModuleType("tests.doc_false_negative_rate")
    exec(compile(block, str(DOC), "exec"), module.__dict__)
    sys.modules[module.__name__] = module  # importable, as the real module would be
    return module


MODULE = _functional_module()
FalseNegativeRate = per_image_metric("FalseNegativeRate", MODULE.false_negative_rate, MODULE._fnr_update,
                                     higher_is_better=False)
"""The class as the catalog would define it (a module-level name: pickling finds it)."""


def _reference(preds: list[np.ndarray], gts: list[np.ndarray]) -> float:
    values = [float(((g > 0.5) & (p <= 0.5)).sum() / (g > 0.5).sum()) if (g > 0.5).any() else 0.0
              for p, g in zip(preds, gts)]
    return float(np.mean(values))


def test_the_documented_metric_needs_only_its_functional_and_its_catalog_entry(monkeypatch):
    module, metric_class = MODULE, FalseNegativeRate
    assert doctest.testmod(module).failed == 0  # the functional's own example
    doc = DOC.read_text()
    assert 'per_image_metric("FalseNegativeRate", false_negative_rate, _fnr_update, higher_is_better=False)' in doc
    entry = catalog._entry("false_negative_rate", metric_class, module.false_negative_rate, tier="cheap")
    monkeypatch.setitem(catalog.CATALOG, "false_negative_rate", entry)

    generator = torch.Generator().manual_seed(0)
    preds = [torch.rand(9, 13, generator=generator) for _ in range(5)] + [torch.rand(1, 7, generator=generator)]
    gts = [torch.rand(p.shape, generator=generator) > 0.4 for p in preds]
    gts[2][:] = False  # an empty gt scores 0
    expected = _reference([p.numpy() for p in preds], [g.numpy() for g in gts])

    collection = make_collection(metrics=["false_negative_rate"], threshold=0.5)
    collection.update(preds, gts)
    assert abs(float(collection.compute()["false_negative_rate"]) - expected) <= 1e-12
    assert abs(float(module.false_negative_rate(preds, gts)) - expected) <= 1e-12
    check_metric(metric_class, list(zip(preds, gts)), expected, functional=module.false_negative_rate, atol=1e-12)
    assert metric_class(threshold=0.3).state_dict().keys() != metric_class().state_dict().keys()  # fingerprinted
