"""Shared checks of the panoptic tests: our dict against the port's result dict, value by value."""

from __future__ import annotations

import functools

import torch

from tests.panoptic.scenes import (
    STUFFS,
    THINGS,
    categories_of,
    make_scene,
    port_form,
    to_tensor_form,
)
from tests.reference import panoptic_port

COCO = {"output": "dict", "rules": "panopticapi"}
"""The options of panopticapi's numbers in our flat dict (the class and function default to torchmetrics')."""

SIZES = [(97, 131), (60, 41), (1, 57), (57, 1), (5, 7), (33, 200), (64, 48), (97, 131)]
"""Scene sizes (odd, non-square, 1xN, Nx1, tiny; the first and last equal, so a list holds a batch of two)."""


def assert_matches(ours: dict[str, torch.Tensor], reference: dict, atol: float = 1e-12) -> float:
    """Every All / Things / Stuff and per-class value equal within ``atol``; returns the largest difference."""
    worst = 0.0
    for group, suffix in (("All", ""), ("Things", "_things"), ("Stuff", "_stuff")):
        for name in ("pq", "sq", "rq"):
            diff = abs(float(ours[name + suffix]) - float(reference[group][name]))
            assert diff <= atol, (group, name, float(ours[name + suffix]), reference[group][name])
            worst = max(worst, diff)
        assert int(ours["n" + suffix]) == reference[group]["n"], group
    for index, category in enumerate(ours["classes"].tolist()):
        for name in ("pq", "sq", "rq"):
            diff = abs(float(ours[f"{name}_per_class"][index]) - float(reference["per_class"][category][name]))
            assert diff <= atol, (category, name)
            worst = max(worst, diff)
    return worst


@functools.cache
def scenes(seed: int = 0, sizes: tuple = tuple(SIZES), things: int = 8):
    """Generated scenes and their tensor forms (cached: generated once per session)."""
    out = []
    for index, (height, width) in enumerate(sizes):
        scene = make_scene(height, width, [seed, index], things=things)
        out.append((scene, *to_tensor_form(scene)))
    return out


def port_result(forms, iou_type: str, ratio: float = 0.02) -> dict:
    """The port's result on the tensor forms ``[(preds, target, iscrowd), ...]`` (exact band rule)."""
    views = [port_form(p, t, c, THINGS, STUFFS) for p, t, c in forms]
    return panoptic_port.pq_compute(views, categories_of(THINGS, STUFFS), iou_type, ratio, exact=True)
