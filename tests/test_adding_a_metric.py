"""docs/adding_a_metric.md's example, run as written: its four code blocks (the functional module, the class, the
descriptor, the test) are executed under the module names the doc gives them, and the metric they add is then in its
tier, in ``make_collection``, in the columns of ``nobg-metrics eval`` and on the generated metric-names page."""

from __future__ import annotations

import doctest
import importlib.util
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import nobg_metrics.catalog as catalog
from nobg_metrics.cli.eval.main import main
from nobg_metrics.collection import make_collection
from tests.cli.folders import make_dataset, read_results

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "adding_a_metric.md"
NAME = "false_negative_rate"


def _blocks() -> dict[int, tuple[str, str]]:
    """``{section: (path the doc names, code)}`` of the doc's numbered sections."""
    found = re.findall(r"### (\d)\. [^`\n]*`([^`]+)`\n\n```python\n(.*?)```", DOC.read_text(), re.S)
    return {int(number): (path, code) for number, path, code in found}


def _module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def _exec(path: str, code: str) -> types.ModuleType:
    """Run a block as the module the doc says it is (importable by that name while the test runs)."""
    module = types.ModuleType(_module_name(path))
    module.__file__ = str(DOC)
    sys.modules[module.__name__] = module  # before running it: its classes pickle by that name
    exec(compile(code, str(DOC), "exec"), module.__dict__)
    return module


@pytest.fixture(scope="module")
def added() -> Iterator[dict[int, types.ModuleType]]:
    """The doc's four blocks run in order; afterwards the modules and the catalog entry are removed again."""
    blocks = _blocks()
    assert sorted(blocks) == [1, 2, 3, 4], sorted(blocks)
    modules: dict[int, types.ModuleType] = {}
    try:
        for number in (1, 2):
            modules[number] = _exec(*blocks[number])
        modules[3] = types.ModuleType("adding_a_metric_descriptor")  # the catalog's own module in the package
        exec(compile(blocks[3][1], str(DOC), "exec"), modules[3].__dict__)
        modules[4] = _exec(*blocks[4])
        yield modules
    finally:
        catalog.CATALOG.pop(NAME, None)
        for path, _ in blocks.values():
            sys.modules.pop(_module_name(path), None)


def test_the_doc_shows_one_file_per_layer():
    paths = [path for path, _ in _blocks().values()]
    assert paths == ["nobg_metrics/functional/sod/false_negative_rate.py",
                     "nobg_metrics/metrics/sod/false_negative_rate.py", "nobg_metrics/catalog/entries.py",
                     "tests/sod/test_false_negative_rate.py"]
    assert "per_image_metric" not in DOC.read_text()  # one way to write a per-image class: a PerImageMean subclass


def test_the_documented_functional_class_and_test_pass(added):
    functional, metric = added[1], added[2]
    assert doctest.testmod(functional).failed == 0 and doctest.testmod(metric).failed == 0  # their examples
    added[4].test_false_negative_rate_equals_its_reference()  # the doc's own test
    metric_class = metric.FalseNegativeRate
    assert metric_class(threshold=0.3).metric_state.keys() != metric_class().metric_state.keys()  # fingerprinted
    with pytest.raises(ValueError, match="threshold"):
        metric_class(threshold=2.0)


def test_the_registered_metric_is_in_its_tier_and_in_make_collection(added):
    entry = catalog.descriptor(NAME)
    assert entry.metric is added[2].FalseNegativeRate and entry.kind == "maps" and entry.header == ("FNR", "FNR")
    assert NAME in catalog.TIERS["cheap"] and NAME in catalog.TIERS["expensive"] and NAME in catalog.METRIC_NAMES
    generator = torch.Generator().manual_seed(1)
    pred, gt = torch.rand(3, 1, 12, 15, generator=generator), torch.rand(3, 1, 12, 15, generator=generator) > 0.5
    cheap = make_collection("cheap", threshold=0.5)
    cheap.update(pred, gt)
    values = cheap.compute()
    assert torch.equal(values[NAME], added[1].false_negative_rate(pred, gt))
    named = make_collection(metrics=[NAME, "mae"])
    named.update(pred, gt)
    assert sorted(named.compute()) == ["false_negative_rate", "mae"]
    with pytest.raises(ValueError, match="already registered"):
        catalog.register(entry)


def test_the_registered_metric_is_a_column_of_the_command(added, tmp_path):
    make_dataset(tmp_path / "data", count=3, formats=("u8",))
    out = tmp_path / "out"
    arguments = ["eval", "--gt", str(tmp_path / "data" / "gt"), "--pred", str(tmp_path / "data" / "u8"),
                 "--out", str(out), "--workers", "0", "--quiet", "--no-plots"]
    assert main(arguments) == 0  # the default set: the cheap tier
    document = read_results(out)
    assert NAME in document["metrics"] and NAME in document["results"][0]["metrics"]
    assert "false_negative_rate ↓" in (out / "table.md").read_text()  # lower is better, from the class


def test_the_registered_metric_is_on_the_generated_metric_names_page(added):
    spec = importlib.util.spec_from_file_location("metric_names_tool", ROOT / "tools" / "metric_names.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    page = tool.render()
    assert ("| `false_negative_rate` | `FalseNegativeRate` | cheap | FNR | 1 - recall of the binarised prediction |"
            in page)
