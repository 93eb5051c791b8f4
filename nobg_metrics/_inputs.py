"""The input contract: one place that validates, reshapes and converts every metric's inputs.

Accepted forms (``pred`` and ``gt`` alike, and ``trimap`` for the matting metrics, whose batches are
built in :mod:`nobg_metrics._matting_inputs` with the checks of this module):

- a tensor of shape :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`;
- a list or tuple of such tensors, which may differ in size (datasets mix resolutions).

Reading rules (REFERENCES.md, "Input conventions"):

- ``pred``: float in [0, 1] (probabilities — apply ``sigmoid`` to logits first), ``uint8`` on 0..255 read
  as ``pred / 255`` in float64 (PySODMetrics) or, for mattes, ``single(pred) / 255`` (DIM), or ``bool``.
- ``gt`` masks: ``bool``; ``uint8`` is foreground where ``gt > 128`` (strict, the reference rule); float is
  foreground where ``gt > 0.5``. ``gt`` mattes keep their soft values.
- ``normalize=True`` is PySODMetrics' per-image min-max stretch ``(p - min) / (max - min)``, skipped
  when ``max == min``.

Every error names the argument, what was expected and what came. Checks that need a device sync
(NaN/inf, value range, trimap values) are skipped with ``validate_args=False``; shape, dtype and device
checks cost nothing and always run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Union, get_args

import torch
from torch import Tensor

from nobg_metrics._shared_checks import check_once
from nobg_metrics.ops.levels import binarize_gt, lookup_levels, range_level_values

EmptyGt = Literal["agreement", "reference"]
"""Policy for images whose gt is all background or all foreground (see docs/inputs.md)."""

InputMaps = Union[Tensor, Sequence[Tensor]]
"""A batch tensor or a list/tuple of tensors (possibly of different sizes)."""

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@dataclass
class SegBatch:
    """Equal-size images of a segmentation batch in canonical form.

    Attributes:
        pred_raw: :math:`(B, H, W)` the prediction as given: ``uint8`` levels, or float32/float64 values
            (half precision is upcast to float32, ``bool`` to float32).
        gt_raw: :math:`(B, H, W)` the gt as given (bool, uint8 or float); read it through :attr:`gt`.
        normalize: whether the per-image min-max stretch applies.
    """

    pred_raw: Tensor
    gt_raw: Tensor
    normalize: bool
    _pred: Tensor | None = field(default=None, repr=False)
    _gt: Tensor | None = field(default=None, repr=False)
    _level_values: Tensor | None = field(default=None, repr=False)

    @property
    def gt(self) -> Tensor:
        """:math:`(B, H, W)` bool foreground mask by the reference rules (see :func:`binarize_gt`)."""
        if self._gt is None:
            self._gt = binarize_gt(self.gt_raw)
        return self._gt

    @property
    def histogram_gt(self) -> Tensor:
        """:math:`(B, H, W)` the gt in a form :func:`~nobg_metrics.ops.histogram.joint_histogram` reads
        without a separate binarisation pass: raw ``uint8`` (class ``> 128``) or bool."""
        return self.gt_raw if self.gt_raw.dtype == torch.uint8 and self._gt is None else self.gt

    @property
    def is_uint8(self) -> bool:
        """True when the prediction arrived as ``uint8`` levels (the PNG protocol)."""
        return self.pred_raw.dtype == torch.uint8

    @property
    def pred(self) -> Tensor:
        """:math:`(B, H, W)` prediction in [0, 1] after the optional stretch.

        ``uint8`` input becomes float64 ``pred / 255`` exactly as PySODMetrics computes it; float input
        keeps its dtype (float32 or float64).
        """
        if self._pred is None:
            if self.is_uint8:  # 256 values per image, each computed as the reference computes it; one gather
                self._pred = lookup_levels(self.level_values, self.pred_raw)
            else:
                self._pred = min_max_stretch(self.pred_raw) if self.normalize else self.pred_raw
        return self._pred

    @property
    def level_values(self) -> Tensor:
        """:math:`(B, 256)` float64: the value :attr:`pred` gives each uint8 level (uint8 input only)."""
        if self._level_values is None:
            levels = self.pred_raw.flatten(1)
            self._level_values = range_level_values(levels.amin(dim=1), levels.amax(dim=1), self.normalize)
        return self._level_values

    @property
    def num_pixels(self) -> int:
        """Pixels per image, ``H * W``."""
        return self.gt_raw.shape[-1] * self.gt_raw.shape[-2]

    @property
    def shape(self) -> torch.Size:
        """``(B, H, W)`` (reading it does not binarise the gt)."""
        return self.gt_raw.shape


def min_max_stretch(pred: Tensor) -> Tensor:
    """PySODMetrics' per-image ``mapminmax``: ``(p - min) / (max - min)`` where ``max != min``.

    Args:
        pred: :math:`(B, H, W)` float.

    Returns:
        :math:`(B, H, W)` the stretched maps, same dtype.

    Example:
        >>> min_max_stretch(torch.tensor([[[0.2, 0.6]], [[0.5, 0.5]]]))
        tensor([[[0.0000, 1.0000]],
        <BLANKLINE>
                [[0.5000, 0.5000]]])
    """
    low = pred.amin(dim=(-2, -1), keepdim=True)
    high = pred.amax(dim=(-2, -1), keepdim=True)
    span = high - low
    stretched = (pred - low) / torch.where(span == 0, torch.ones_like(span), span)
    return torch.where(span == 0, pred, stretched)


def check_option(name: str, value: object, allowed: object) -> None:
    """Reject a constructor/function option outside a ``Literal`` (or a tuple) of allowed values.

    Example:
        >>> check_option("empty_gt", "agreement", EmptyGt)
        >>> check_option("empty_gt", "nan", EmptyGt)
        Traceback (most recent call last):
        ...
        ValueError: `empty_gt` must be one of ('agreement', 'reference'), got 'nan'
    """
    choices = get_args(allowed) if get_args(allowed) else tuple(allowed)  # type: ignore[arg-type]
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {choices}, got {value!r}")


def check_flag(name: str, value: object) -> None:
    """Reject a non-bool flag option (``1`` or ``"yes"`` would silently mean True).

    Example:
        >>> check_flag("allow_host_sync", 1)
        Traceback (most recent call last):
        ...
        TypeError: `allow_host_sync` must be a bool, got int
    """
    if not isinstance(value, bool):
        raise TypeError(f"`{name}` must be a bool, got {type(value).__name__}")


def check_number(name: str, value: object, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, integer: bool = False) -> None:
    """Reject a numeric option of the wrong type or outside ``[low, high]`` (``(low, high]`` if ``low_open``)."""
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise TypeError(f"`{name}` must be {'an int' if integer else 'a number'}, got {type(value).__name__}")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"`{name}` must be {'>' if low_open else '>='} {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"`{name}` must be <= {high}, got {value}")


def _as_list(name: str, value: InputMaps) -> list[Tensor] | None:
    """Return the list form of a list/tuple input, ``None`` for a tensor; reject anything else."""
    if isinstance(value, Tensor):
        return None
    if isinstance(value, (list, tuple)):
        if len(value) == 0:
            raise ValueError(f"`{name}` must hold at least one image, got an empty {type(value).__name__}")
        for index, item in enumerate(value):
            if not isinstance(item, Tensor):
                raise TypeError(f"`{name}[{index}]` must be a torch.Tensor, got {type(item).__name__}")
        return list(value)
    raise TypeError(f"`{name}` must be a torch.Tensor or a list/tuple of tensors, got {type(value).__name__}")


def _to_bhw(name: str, tensor: Tensor) -> Tensor:
    """Reshape (B,1,H,W) / (B,H,W) / (H,W) to a contiguous (B,H,W); reject other layouts and empty batches."""
    if tensor.ndim == 2:
        tensor = tensor.unsqueeze(0)
    elif tensor.ndim == 4:
        if tensor.shape[1] != 1:
            raise ValueError(
                f"`{name}` must have one channel, shape (B, 1, H, W); got channel dim {tensor.shape[1]} "
                f"in shape {tuple(tensor.shape)}"
            )
        tensor = tensor[:, 0]
    elif tensor.ndim != 3:
        raise ValueError(
            f"`{name}` must have shape (B, 1, H, W), (B, H, W) or (H, W); got {tensor.ndim} dims, "
            f"shape {tuple(tensor.shape)}"
        )
    if tensor.device.type == "meta":
        raise ValueError(f"`{name}` must hold data (a CPU or CUDA tensor); got a tensor on the meta device")
    if tensor.shape[0] == 0:
        raise ValueError(f"`{name}` must hold at least one image, got an empty batch of shape {tuple(tensor.shape)}")
    if tensor.shape[1] == 0 or tensor.shape[2] == 0:
        raise ValueError(f"`{name}` images must have H >= 1 and W >= 1, got shape {tuple(tensor.shape)}")
    return tensor.contiguous()  # views of any strides are accepted; the metrics read rows as flat memory


def _check_dtype(name: str, tensor: Tensor, *, allow_bool: bool = True) -> None:
    dtype = tensor.dtype
    if dtype in _FLOAT_DTYPES or dtype == torch.uint8 or (allow_bool and dtype == torch.bool):
        return
    kinds = "float in [0, 1], uint8 on 0..255" + (" or bool" if allow_bool else "")
    if dtype.is_floating_point or dtype.is_complex:
        raise TypeError(f"`{name}` must be {kinds}; got unsupported dtype {dtype}")
    raise TypeError(
        f"`{name}` must be {kinds}; got integer dtype {dtype} (only uint8 is read, on the 0..255 scale: "
        f"convert with .to(torch.uint8) or divide to floats in [0, 1])"
    )


def _check_values(name: str, tensor: Tensor) -> None:
    """Reject NaN/inf and floats outside [0, 1] (forces a device sync: skipped without validate_args; once per
    tensor in a collection call, :mod:`nobg_metrics._shared_checks`)."""
    if tensor.dtype.is_floating_point:
        check_once("values", tensor, lambda: _scan_values(name, tensor))


def _scan_values(name: str, tensor: Tensor) -> None:
    if not bool(torch.isfinite(tensor).all()):
        bad = "NaN" if bool(torch.isnan(tensor).any()) else "inf"
        raise ValueError(f"`{name}` must be finite; got {bad} values")
    low, high = float(tensor.min()), float(tensor.max())
    if low < 0.0 or high > 1.0:
        hint = " (logits? apply torch.sigmoid first)" if name.startswith("pred") else ""
        raise ValueError(f"`{name}` float values must lie in [0, 1]; got range [{low:.6g}, {high:.6g}]{hint}")


def _check_pair(names: tuple[str, str], first: Tensor, second: Tensor, where: str = "") -> None:
    if first.shape != second.shape:
        raise ValueError(
            f"`{names[0]}`{where} and `{names[1]}`{where} must have the same shape; "
            f"got {tuple(first.shape)} and {tuple(second.shape)}"
        )
    if first.device != second.device:
        raise ValueError(
            f"`{names[0]}`{where} and `{names[1]}`{where} must be on the same device; "
            f"got {first.device} and {second.device}"
        )


def _paired_images(
    maps: dict[str, InputMaps],
) -> list[tuple[str, dict[str, Tensor]]]:
    """Normalise tensors or lists of tensors into ``(where, {argument: (B, H, W)})`` items.

    ``where`` is ``""`` for tensor inputs and ``"[i]"`` for the i-th element of list inputs, so every later
    error names the element (``pred[3]``)."""
    names = list(maps)
    lists = {name: _as_list(name, value) for name, value in maps.items()}
    kinds = {name: lst is None for name, lst in lists.items()}
    if len(set(kinds.values())) > 1:
        got = ", ".join(f"`{n}` {'tensor' if kinds[n] else 'list'}" for n in names)
        raise TypeError(f"{' and '.join(f'`{n}`' for n in names)} must all be tensors or all be lists; got {got}")
    if kinds[names[0]]:
        item = {name: _to_bhw(name, value) for name, value in maps.items()}  # type: ignore[arg-type]
        for other in names[1:]:
            _check_pair((names[0], other), item[names[0]], item[other])
        return [("", item)]
    lengths = {name: len(lst) for name, lst in lists.items()}  # type: ignore[arg-type]
    if len(set(lengths.values())) > 1:
        raise ValueError(f"the lists must have the same length; got {lengths}")
    items = []
    for index in range(lengths[names[0]]):
        item = {name: _to_bhw(f"{name}[{index}]", lists[name][index]) for name in names}  # type: ignore[index]
        for other in names[1:]:
            _check_pair((names[0], other), item[names[0]], item[other], where=f"[{index}]")
        items.append((f"[{index}]", item))
    return items


def _group_by_size(items: list[dict[str, Tensor]]) -> list[dict[str, Tensor]]:
    """Concatenate items of equal (H, W) and dtype so each size is processed as one batch."""
    if len(items) == 1:
        return items
    groups: dict[tuple, list[dict[str, Tensor]]] = {}
    for item in items:
        key = tuple((tensor.shape[-2:], tensor.dtype) for tensor in item.values())
        groups.setdefault(key, []).append(item)
    return [{name: torch.cat([it[name] for it in group]) for name in group[0]} for group in groups.values()]


def _pred_dtype(tensor: Tensor) -> Tensor:
    if tensor.dtype in (torch.float16, torch.bfloat16, torch.bool):
        return tensor.float()
    return tensor


def prepare_segmentation(
    pred: InputMaps,
    gt: InputMaps,
    *,
    normalize: bool = False,
    validate_args: bool = True,
) -> list[SegBatch]:
    """Validate segmentation inputs and return them as equal-size groups.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list of those.
        gt: same layout as ``pred``; bool, uint8 (``> 128``) or float (``> 0.5``).
        normalize: apply the per-image min-max stretch to ``pred``.
        validate_args: run the checks that force a device sync (NaN, inf, range).

    Returns:
        One :class:`SegBatch` per distinct image size (a tensor input gives exactly one).

    Example:
        >>> groups = prepare_segmentation(torch.rand(2, 1, 4, 6), torch.rand(2, 1, 4, 6) > 0.5)
        >>> len(groups), tuple(groups[0].gt.shape)
        (1, (2, 4, 6))
    """
    items = _paired_images({"pred": pred, "gt": gt})
    for where, item in items:
        for name in ("pred", "gt"):
            _check_dtype(name + where, item[name])
        if validate_args:
            for name in ("pred", "gt"):
                _check_values(name + where, item[name])
    batches = []
    for group in _group_by_size([item for _, item in items]):
        batches.append(SegBatch(_pred_dtype(group["pred"]), group["gt"], normalize))
    return batches


def _check_trimap_values(trimap: Tensor, name: str = "trimap") -> None:
    check_once("trimap", trimap, lambda: _scan_trimap(trimap, name))


def _scan_trimap(trimap: Tensor, name: str) -> None:
    allowed = (0, 128, 255) if trimap.dtype == torch.uint8 else (0.0, 0.5, 1.0)
    ok = (trimap == allowed[0]) | (trimap == allowed[1]) | (trimap == allowed[2])
    if not bool(ok.all()):
        bad = trimap[~ok][0].item()
        raise ValueError(f"`{name}` values must be {allowed} for {trimap.dtype}; got {bad}")
