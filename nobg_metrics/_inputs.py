"""The input contract: one place that validates, reshapes and groups every metric's inputs (:func:`prepare`).

Accepted forms (``pred``, ``gt`` and, where a metric reads them, ``trimap`` and ``gt_skeleton``):

- a tensor of shape :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`;
- a list or tuple of such tensors, which may differ in size (datasets mix resolutions); the RGB ``image`` of the
  camouflage measure is :math:`(B, 3, H, W)` / :math:`(3, H, W)` uint8 beside each of them.

Reading rules (docs/inputs.md; the views that apply them: :mod:`nobg_metrics._seg_batch` for masks,
:mod:`nobg_metrics._matting_inputs` for mattes):

- ``pred``: float in [0, 1] (probabilities — apply ``sigmoid`` to logits first), ``uint8`` on 0..255 read
  as ``pred / 255`` in float64 (PySODMetrics) or, for mattes, ``single(pred) / 255`` (DIM), or ``bool``.
- ``gt`` masks: ``bool``; ``uint8`` is foreground where ``gt > 128`` (strict, the reference rule); float is
  foreground where ``gt > 0.5``. ``gt`` mattes keep their soft values.
- ``trimap``: uint8 {0, 128, 255} or float {0, 0.5, 1}; unknown = 128 / 0.5.
- ``normalize=True`` is PySODMetrics' per-image min-max stretch ``(p - min) / (max - min)``, skipped
  when ``max == min``.

Every error names the argument (``pred[3]``), what was expected and what came. Checks that need a device sync
(NaN/inf, value range, trimap levels) are skipped with ``validate_args=False``; shape, dtype and device checks cost
nothing and always run. The option checks of every constructor and function (:func:`check_option`,
:func:`check_flag`, :func:`check_number`) live here too.

Inputs with a structure of their own (instance dicts, panoptic id maps, Cityscapes instance lists, DAVIS sequences)
have their own preparers beside their functionals (``functional/instance/inputs.py``, ``functional/panoptic/inputs.py``,
...); they check through the vocabulary at the end of this module (:func:`item_name`, :func:`input_error`,
:func:`check_tensor`, :func:`check_sequence`, ...), so every error of the library has one shape:
``preds[3]["masks"] must be <expected>, got <what came>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, cast, get_args

import torch
from torch import Tensor

from nobg_metrics._shared_checks import check_once

EmptyGt = Literal["agreement", "reference"]
"""Policy for images whose gt is all background or all foreground (see docs/inputs.md)."""

InputMaps = Tensor | Sequence[Tensor]
"""A batch tensor or a list/tuple of tensors (possibly of different sizes)."""

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@dataclass(frozen=True)
class InputGroup:
    """The checked images of one size of a batch, in input order.

    Attributes:
        pred: :math:`(B, H, W)` as given (float, uint8 or bool).
        gt: :math:`(B, H, W)` as given.
        trimap: :math:`(B, H, W)` uint8 / float, or ``None``.
        image: :math:`(B, 3, H, W)` uint8 RGB, or ``None``.
        gt_skeleton: :math:`(B, H, W)` bool / uint8, or ``None``.
        void: :math:`(B, H, W)` bool / uint8 / float mask of pixels to leave out, or ``None``.
    """

    pred: Tensor
    gt: Tensor
    trimap: Tensor | None = None
    image: Tensor | None = None
    gt_skeleton: Tensor | None = None
    void: Tensor | None = None


def prepare(pred: InputMaps, gt: InputMaps, *, trimap: InputMaps | None = None, image: InputMaps | None = None,
            gt_skeleton: InputMaps | None = None, void: InputMaps | None = None,
            grouping: Literal["size", "runs"] = "size", validate_args: bool = True) -> list[InputGroup]:
    """Check every input of a batch and group its images by size: the one preparer every functional uses.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list of those; float in [0, 1], uint8, bool.
        gt: the same layout; bool, uint8 or float.
        trimap: optional, the same layout; uint8 {0, 128, 255} or float {0, 0.5, 1} (bool refused).
        image: optional RGB, :math:`(B, 3, H, W)` / :math:`(3, H, W)` uint8, one per ``pred`` (a list beside lists).
        gt_skeleton: optional, the same layout as ``gt``; bool or uint8.
        void: optional, the same layout; a mask (bool, uint8 ``> 128``, float ``> 0.5``) of pixels to leave out.
        grouping: ``"size"``: one group per distinct image size and dtypes; ``"runs"``: one per run of consecutive
            equal-size images, in input order (video frames).
        validate_args: run the checks that force a device sync (NaN, inf, value range, trimap levels).

    Returns:
        The :class:`InputGroup` of each size (or run); a tensor input gives exactly one.

    Examples:
        >>> prepare(torch.rand(2, 4, 6), torch.ones(2, 4, 5))
        Traceback (most recent call last):
        ...
        ValueError: `pred` and `gt` must have the same shape; got (2, 4, 6) and (2, 4, 5)
        >>> groups = prepare([torch.rand(4, 6), torch.rand(5, 5), torch.rand(4, 6)],
        ...                  [torch.ones(4, 6), torch.ones(5, 5), torch.ones(4, 6)])
        >>> [tuple(group.pred.shape) for group in groups]
        [(2, 4, 6), (1, 5, 5)]
    """
    maps: dict[str, InputMaps] = {"pred": pred, "gt": gt}
    for name, value in (("trimap", trimap), ("gt_skeleton", gt_skeleton), ("void", void)):
        if value is not None:
            maps[name] = value
    items = _paired_images(maps)
    images = _paired_rgb(image, items) if image is not None else None
    for index, (where, item) in enumerate(items):
        for name, tensor in item.items():
            _check_dtype(name + where, tensor, kind=name)
            if validate_args and name != "gt_skeleton":
                _check_values(name + where, tensor)
                if name == "trimap":
                    _check_trimap_values(tensor, name + where)
        if images is not None:
            item["image"] = images[index]
    check_option("grouping", grouping, ("size", "runs"))
    grouped = _group_by_size if grouping == "size" else _group_runs
    return [InputGroup(**group) for group in grouped([item for _, item in items])]


def check_option(name: str, value: object, allowed: object) -> None:
    """Reject a constructor/function option outside a ``Literal`` (or a tuple) of allowed values.

    Examples:
        >>> check_option("empty_gt", "agreement", EmptyGt)
        >>> check_option("empty_gt", "nan", EmptyGt)
        Traceback (most recent call last):
        ...
        ValueError: `empty_gt` must be one of ('agreement', 'reference'), got 'nan'
    """
    # not a Literal: a tuple (or other iterable) of the values
    choices = get_args(allowed) if get_args(allowed) else tuple(cast("Iterable[object]", allowed))
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {choices}, got {value!r}")


def check_flag(name: str, value: object) -> None:
    """Reject a non-bool flag option (``1`` or ``"yes"`` would silently mean True).

    Examples:
        >>> check_flag("validate_args", 1)
        Traceback (most recent call last):
        ...
        TypeError: `validate_args` must be a bool, got int
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


_KINDS = {"pred": "float in [0, 1], uint8 on 0..255 or bool", "gt": "float in [0, 1], uint8 on 0..255 or bool",
          "void": "float in [0, 1], uint8 on 0..255 or bool",
          "trimap": "uint8 (0 background, 128 unknown, 255 foreground) or float (0, 0.5, 1)",
          "gt_skeleton": "bool or uint8"}


def _check_dtype(name: str, tensor: Tensor, *, kind: str = "pred") -> None:
    """The dtypes each argument accepts (``kind``: ``pred``, ``gt``, ``trimap``, ``gt_skeleton``)."""
    dtype = tensor.dtype
    if kind == "gt_skeleton":
        if dtype not in (torch.bool, torch.uint8):
            raise TypeError(f"`{name}` must be {_KINDS[kind]}, got {dtype}")
        return
    if dtype in _FLOAT_DTYPES or dtype == torch.uint8 or (kind != "trimap" and dtype == torch.bool):
        return
    kinds = _KINDS[kind if kind in _KINDS else "pred"]
    if kind == "trimap":  # the one trimap check of every metric that takes one (scored, forced or ignored)
        hint = " (a trimap has three levels, a bool map two)" if dtype == torch.bool else ""
        raise TypeError(f"`{name}` must be {kinds}; got dtype {dtype}{hint}")
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
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


def _paired_images(maps: dict[str, InputMaps]) -> list[tuple[str, dict[str, Tensor]]]:
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
        item = {name: _to_bhw(name, cast(Tensor, value)) for name, value in maps.items()}  # all tensors here
        for other in names[1:]:
            _check_pair((names[0], other), item[names[0]], item[other])
        return [("", item)]
    lengths = {name: len(lst) for name, lst in lists.items() if lst is not None}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"the lists must have the same length; got {lengths}")
    items = []
    for index in range(lengths[names[0]]):
        # all lists here
        item = {name: _to_bhw(f"{name}[{index}]", cast("list[Tensor]", lists[name])[index]) for name in names}
        for other in names[1:]:
            _check_pair((names[0], other), item[names[0]], item[other], where=f"[{index}]")
        items.append((f"[{index}]", item))
    return items


def _paired_rgb(image: InputMaps, items: list[tuple[str, dict[str, Tensor]]]) -> list[Tensor]:
    """The RGB image of each item, checked against its ``pred``: :math:`(B, 3, H, W)` uint8 contiguous."""
    images = _as_list("image", image)
    if (images is None) != (items[0][0] == ""):
        raise TypeError("`image` must be a tensor beside tensor `pred` / `gt`, or a list beside lists")
    if images is None:
        images = [cast(Tensor, image)]  # a tensor here
    if len(images) != len(items):
        raise ValueError(f"`image` must hold one entry per `pred`; got {len(images)} for {len(items)}")
    checked = []
    for one, (where, item) in zip(images, items):
        name, batch = f"image{where}", item["pred"]
        if one.dtype != torch.uint8:
            raise TypeError(f"`{name}` must be uint8 RGB on 0..255; got dtype {one.dtype}")
        tensor = one[None] if one.ndim == 3 else one
        if tensor.ndim != 4 or tensor.shape[1] != 3:
            raise ValueError(f"`{name}` must have shape (B, 3, H, W) or (3, H, W) (channels R, G, B); got shape "
                             f"{tuple(one.shape)}")
        expected = (batch.shape[0], 3, *batch.shape[1:])
        if tuple(tensor.shape) != expected:
            raise ValueError(f"`{name}` must match its pred / gt: shape {expected}; got {tuple(tensor.shape)}")
        if tensor.device != batch.device:
            raise ValueError(f"`{name}` must be on the device of its pred / gt ({batch.device}); got {tensor.device}")
        checked.append(tensor.contiguous())
    return checked


def _group_runs(items: list[dict[str, Tensor]]) -> list[dict[str, Tensor]]:
    """Concatenate runs of consecutive items of equal (H, W) and dtypes: the groups keep the input order."""
    runs: list[list[dict[str, Tensor]]] = []
    for item in items:  # a loop over images (one run per change of size)
        key = tuple((name, tensor.shape[-2:], tensor.dtype) for name, tensor in item.items())
        if runs and tuple((n, t.shape[-2:], t.dtype) for n, t in runs[-1][0].items()) == key:
            runs[-1].append(item)
        else:
            runs.append([item])
    return [run[0] if len(run) == 1 else {name: torch.cat([it[name] for it in run]) for name in run[0]} for run in runs]


def _group_by_size(items: list[dict[str, Tensor]]) -> list[dict[str, Tensor]]:
    """Concatenate items of equal (H, W) and dtypes so each size is processed as one batch."""
    if len(items) == 1:
        return items
    groups: dict[tuple, list[dict[str, Tensor]]] = {}
    for item in items:
        key = tuple((name, tensor.shape[-2:], tensor.dtype) for name, tensor in item.items())
        groups.setdefault(key, []).append(item)
    return [{name: torch.cat([it[name] for it in group]) for name in group[0]} for group in groups.values()]


def _check_trimap_values(trimap: Tensor, name: str = "trimap") -> None:
    check_once("trimap", trimap, lambda: _scan_trimap(trimap, name))


def _scan_trimap(trimap: Tensor, name: str) -> None:
    allowed = (0, 128, 255) if trimap.dtype == torch.uint8 else (0.0, 0.5, 1.0)
    ok = (trimap == allowed[0]) | (trimap == allowed[1]) | (trimap == allowed[2])
    if not bool(ok.all()):
        bad = trimap[~ok][0].item()
        raise ValueError(f"`{name}` values must be {allowed} for {trimap.dtype}; got {bad}")


# -------------------------------------------------------------------------------- the structured inputs' checks
# The preparers of per-image dicts and maps (instance AP, Cityscapes, panoptic) word every error as the checks
# above do: "`<argument>` must <expected>, got <what came>", the argument named with its index and key.


def item_name(argument: str, index: int | None = None, key: str | None = None) -> str:
    """The name an error gives an input element: ``preds``, ``preds[3]``, ``preds[3]["masks"]``.

    Examples:
        >>> item_name("preds", 3, "masks")
        'preds[3]["masks"]'
    """
    name = argument if index is None else f"{argument}[{index}]"
    return name if key is None else f'{name}["{key}"]'


def input_error(name: str, expected: str, got: object, kind: type[Exception] = ValueError) -> Exception:
    """The error for input ``name`` (ValueError for a wrong value or shape, TypeError for a wrong type or dtype).

    Examples:
        >>> input_error('preds[0]["masks"]', "have shape (N, H, W)", (2, 30))
        ValueError('`preds[0]["masks"]` must have shape (N, H, W), got (2, 30)')
    """
    return kind(f"`{name}` must {expected}, got {got}")


def check_tensor(name: str, value: object) -> Tensor:
    """``value`` if it is a tensor, else a ``TypeError`` naming ``name``."""
    if not isinstance(value, Tensor):
        raise input_error(name, "be a torch.Tensor", type(value).__name__, TypeError)
    return value


def check_sequence(name: str, value: object, expected: str) -> Sequence:
    """``value`` if it is a list, tuple or other sequence (not a string), else a ``TypeError`` ("`name` must be
    ``expected``, got <type>")."""
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise input_error(name, f"be {expected}", type(value).__name__, TypeError)
    return value


def check_same_length(lengths: dict[str, int], per: str) -> None:
    """The arguments must have one entry each ``per`` image (``lengths``: argument -> length).

    Examples:
        >>> check_same_length({"preds": 2, "target": 1}, "one dict per image")
        Traceback (most recent call last):
        ...
        ValueError: `preds` and `target` must have the same length (one dict per image), got 2 and 1
    """
    if len(set(lengths.values())) > 1:
        names = " and ".join(f"`{name}`" for name in lengths)
        raise ValueError(f"{names} must have the same length ({per}), got "
                         f"{' and '.join(str(length) for length in lengths.values())}")


def check_holds_data(name: str, tensor: Tensor) -> None:
    """A tensor on the meta device holds no values to score."""
    if tensor.device.type == "meta":
        raise input_error(name, "hold data (a CPU or CUDA tensor)", "a tensor on the meta device")


def check_device(name: str, tensor: Tensor, reference: str, device: torch.device) -> None:
    """``tensor`` must lie on ``device``, the device of the input named ``reference``."""
    if tensor.device != device:
        raise input_error(name, f"be on the device of `{reference}` ({device})", tensor.device)


def check_integer_dtype(name: str, tensor: Tensor, expected: str) -> None:
    """An integer tensor (any width; bool, float and complex refused): a ``TypeError`` "`name` must be
    ``expected``, got <dtype>"."""
    if tensor.dtype == torch.bool or tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        raise input_error(name, f"be {expected}", tensor.dtype, TypeError)
