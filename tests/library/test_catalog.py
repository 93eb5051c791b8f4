"""The catalog is the one declaration of every metric: each entry builds, its functional equals its class after one
update, its groups hold identical states, and what the torch-free command layer keeps (names, labels, printed units)
agrees with it."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import torch

from nobg_metrics.catalog import CATALOG, METRIC_NAMES, TIERS, descriptor, names_with, register
from nobg_metrics.cli.core import names
from nobg_metrics.cli.eval.protocols import PRINTED
from nobg_metrics.collection import make_collection

SHAPE = (2, 1, 20, 26)


def _inputs(name: str) -> tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(7)
    pred = torch.randint(0, 256, SHAPE, dtype=torch.uint8, generator=generator)
    gt = (torch.rand(SHAPE, generator=generator) > 0.55).to(torch.uint8) * 255
    gt[..., 4:12, 5:15] = 255  # one solid object besides the noise
    extra: dict[str, torch.Tensor] = {}
    entry = descriptor(name)
    if "trimap" in entry.inputs:
        extra["trimap"] = torch.where(gt > 128, 255, 0).to(torch.uint8)
        extra["trimap"][..., 3:9, :] = 128
    if "image" in entry.inputs:
        extra["image"] = torch.randint(0, 256, (SHAPE[0], 3, *SHAPE[-2:]), dtype=torch.uint8, generator=generator)
    return (pred, gt), extra


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_every_entry_builds_and_its_functional_is_its_class_after_one_update(name):
    entry = descriptor(name)
    (pred, gt), extra = _inputs(name)
    metric = entry.build()
    metric.update(pred, gt, **extra)
    value = metric.compute()
    functional_inputs = [extra[key] for key in ("trimap", "image") if key in extra]
    parameters = inspect.signature(entry.functional).parameters
    named = {key: extra[key] for key in ("trimap", "image") if key in extra and key in parameters
             and parameters[key].kind is inspect.Parameter.KEYWORD_ONLY}
    positional = [tensor for tensor in functional_inputs if not any(tensor is t for t in named.values())]
    expected = entry.functional(pred, gt, *positional, **named)
    assert torch.equal(value, expected) or (value.isnan().all() and expected.isnan().all()), name
    assert entry.options >= {"validate_args"}, name


def test_the_tiers_are_cumulative_and_every_statistic_group_holds_one_state_layout():
    assert set(TIERS["cheap"]) < set(TIERS["medium"]) < set(TIERS["expensive"])
    for statistic in {d.statistic for d in CATALOG.values() if d.statistic}:
        group = names_with(statistic=statistic)
        built = make_collection(metrics=group)
        layouts = {tuple(sorted(built[name].metric_state)) for name in group}
        assert len(layouts) == 1, statistic


def test_the_command_layer_agrees_with_the_catalog():
    assert tuple(TIERS) == names.TIER_NAMES
    own = [d for d in CATALOG.values() if d.protocol]
    assert {d.name for d in own} == {"birefnet_mse", "birefnet_hce", "birefnet_mba"}  # BiRefNet's own columns
    assert all(d.protocol == "birefnet" and (d.stands_for is None or d.stands_for in CATALOG) for d in own)
    assert set(PRINTED) == {d.name for d in CATALOG.values() if d.printed} <= set(names_with(task="matting"))
    for name in METRIC_NAMES:
        markdown, latex = names.paper_label(name)
        assert markdown and latex and (markdown, latex) == CATALOG[name].header, name
        assert PRINTED[name].label == markdown if name in PRINTED else True, name


def test_every_public_metric_class_has_a_descriptor_and_each_preparer_exists():
    import importlib

    import nobg_metrics.metrics as M
    from nobg_metrics.metrics.base import NobgMetric

    classes = {getattr(M, name) for name in M.__all__}
    concrete = {c for c in classes if isinstance(c, type) and issubclass(c, NobgMetric) and c not in
                {M.ConfusionMetric}}
    assert concrete <= {d.metric for d in CATALOG.values()}, concrete - {d.metric for d in CATALOG.values()}
    for entry in CATALOG.values():
        module, _, function = entry.preparer.rpartition(".")
        assert callable(getattr(importlib.import_module(module), function)), entry.name
    assert names_with(kind=None) == tuple(CATALOG)  # every kind, in the catalog's order
    assert {CATALOG[n].kind for n in ("mean_average_precision", "cityscapes_instance_ap", "panoptic_quality",
                                      "davis_j_and_f")} == {"instances", "cityscapes", "panoptic", "video"}


def test_a_collection_and_the_tiers_take_map_metrics_only():
    structured = tuple(name for name in CATALOG if name not in METRIC_NAMES)
    assert structured and not set(structured) & set(METRIC_NAMES)
    assert not set(structured) & set(TIERS["expensive"])
    for name in structured:
        with pytest.raises(ValueError, match=r"input kind 'maps'.*takes \w+ inputs"):
            make_collection(metrics=["mae", name])
    tiered = dataclasses.replace(CATALOG["davis_j"], name="davis_j_in_a_tier", tier="cheap")
    with pytest.raises(ValueError, match="a tier takes pred / gt maps only"):
        register(tiered)
    assert "davis_j_in_a_tier" not in CATALOG
