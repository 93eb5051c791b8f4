"""The output layouts of panoptic quality: torchmetrics' tensor, our flat dict, panopticapi's nested result.

``values`` is the flat dict of :func:`~nobg_metrics.functional.panoptic.panoptic_quality._panoptic_compute`.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import Tensor

__all__: list[str] = []  # used by the panoptic modules, not exported

PanopticOutput = Literal["tensor", "dict", "panopticapi"]
"""``"tensor"``: torchmetrics' layout (:func:`tensor_layout`); ``"dict"``: every value as a flat dict of tensors;
``"panopticapi"``: ``pq_compute``'s nested dict of Python numbers (:func:`panopticapi_layout`)."""


def tensor_layout(values: dict[str, Tensor], return_sq_and_rq: bool, return_per_class: bool) -> Tensor:
    """torchmetrics' ``PanopticQuality`` output: scalar PQ; ``[pq, sq, rq]`` :math:`(3,)`; :math:`(1, C)`
    per-class PQ; :math:`(C, 3)` per-class ``[pq, sq, rq]`` with both flags.

    Examples:
        >>> values = {"pq": torch.tensor(0.5), "sq": torch.tensor(0.8), "rq": torch.tensor(0.625),
        ...           "pq_per_class": torch.tensor([0.5, 0.0]), "sq_per_class": torch.tensor([0.8, 0.0]),
        ...           "rq_per_class": torch.tensor([0.625, 0.0])}
        >>> tensor_layout(values, True, False).tolist(), tuple(tensor_layout(values, True, True).shape)
        ([0.5, 0.800000011920929, 0.625], (2, 3))
    """
    if return_per_class:
        if return_sq_and_rq:
            return torch.stack([values["pq_per_class"], values["sq_per_class"], values["rq_per_class"]], dim=-1)
        return values["pq_per_class"].view(1, -1)
    if return_sq_and_rq:
        return torch.stack([values["pq"], values["sq"], values["rq"]])
    return values["pq"]


def panopticapi_layout(values: dict[str, Tensor]) -> dict[str, Any]:
    """panopticapi ``pq_compute``'s result: ``All`` / ``Things`` / ``Stuff`` -> ``pq``, ``sq``, ``rq`` (float),
    ``n`` (int); ``per_class`` -> category id -> ``pq``, ``sq``, ``rq``, in the per-class order.

    Examples:
        >>> values = {"pq": torch.tensor(0.5), "sq": torch.tensor(1.0), "rq": torch.tensor(0.5), "n": torch.tensor(1),
        ...           "classes": torch.tensor([3]), "pq_per_class": torch.tensor([0.5]),
        ...           "sq_per_class": torch.tensor([1.0]), "rq_per_class": torch.tensor([0.5])}
        >>> for group in ("_things", "_stuff"):
        ...     values.update({name + group: values[name] for name in ("pq", "sq", "rq", "n")})
        >>> panopticapi_layout(values)["per_class"]
        {3: {'pq': 0.5, 'sq': 1.0, 'rq': 0.5}}
    """
    out: dict[str, Any] = {}
    for group, suffix in (("All", ""), ("Things", "_things"), ("Stuff", "_stuff")):
        out[group] = {"pq": float(values["pq" + suffix]), "sq": float(values["sq" + suffix]),
                      "rq": float(values["rq" + suffix]), "n": int(values["n" + suffix])}
    per_class = {name: values[f"{name}_per_class"].tolist() for name in ("pq", "sq", "rq")}
    out["per_class"] = {category: {name: per_class[name][k] for name in ("pq", "sq", "rq")}
                        for k, category in enumerate(values["classes"].tolist())}
    return out


def shaped(values: dict[str, Tensor], output: str, return_sq_and_rq: bool = False,
           return_per_class: bool = False) -> Tensor | dict[str, Any]:
    """``values`` in the layout ``output`` (:data:`PanopticOutput`)."""
    if output == "dict":
        return values
    if output == "panopticapi":
        return panopticapi_layout(values)
    return tensor_layout(values, return_sq_and_rq, return_per_class)
