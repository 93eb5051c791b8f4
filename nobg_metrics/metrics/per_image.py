"""The one pattern of every "mean of per-image values" metric: a float64 sum, an int64 image count.

A subclass names its states (``_state_prefix``: ``<prefix>_sum``, ``<prefix>_count``), fingerprints the
options that change its values (:meth:`NobgMetric._add_fingerprint`), and says how a batch becomes
``(sum of per-image values, image count)`` in ``_per_image_sums`` — a call of its functional module's ``_x_update``,
so the maths lives once, in :mod:`nobg_metrics.functional`. ``compute()`` is the functional module's
``mean_over_images``. MAE, S-measure, weighted F, the context measures, HCE, mBA, gradient and connectivity errors
follow it; SAD and MSE share one statistic (:mod:`nobg_metrics.metrics.matting.sad_mse`).
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from torch import Tensor

from nobg_metrics._inputs import InputMaps
from nobg_metrics.functional._per_image import mean_over_images
from nobg_metrics.metrics.base import NobgMetric, Statistics


class PerImageMean(NobgMetric):
    """Base of the per-image-mean segmentation metrics: ``update(pred, gt)``.

    Args:
        options: the options that change the per-image values (fingerprinted into a state name).
        validate_args: run the checks that force a device sync.
        kwargs: passed to :class:`torchmetrics.Metric`.
    """

    _state_prefix: str

    def __init__(self, *, options: Mapping[str, object], validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        self._add_fingerprint(options)
        self._sum_state, self._count_state = f"{self._state_prefix}_sum", f"{self._state_prefix}_count"
        self._add_sum(self._sum_state)
        self._add_count(self._count_state)

    def _per_image_sums(self, *inputs: Any, **named: Any) -> tuple[Tensor, Tensor]:  # pragma: no cover - abstract
        """``(float64 sum of per-image values, int64 image count)`` of a batch."""
        raise NotImplementedError

    def _statistics(self, *inputs: Any, **named: Any) -> Statistics:
        total, count = self._per_image_sums(*inputs, **named)
        return {self._sum_state: total, self._count_state: count}

    def _value(self, states: Mapping[str, Any]) -> Tensor:
        """The dataset value: the mean of per-image values, scalar float64."""
        return mean_over_images(states[self._sum_state], states[self._count_state])


class PerImageMattingMean(PerImageMean):
    """Base of the per-image-mean matting metrics: ``update(pred, gt, trimap=None)`` over a trimap region.

    Args:
        clamp_to_trimap: set ``pred`` to the trimap's known values (0 / 1) before scoring.
        options: further options that change the values; validate_args, kwargs: as :class:`PerImageMean`.
    """

    higher_is_better = False
    plot_upper_bound = None

    def __init__(self, *, clamp_to_trimap: bool = False, options: Mapping[str, object] | None = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(options={"clamp_to_trimap": clamp_to_trimap, **(options or {})},
                         validate_args=validate_args, **kwargs)
        self.clamp_to_trimap = clamp_to_trimap

    def update(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> None:
        """Add a batch of mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists, with an optional
        trimap."""
        self._accumulate(self._batch_statistics(pred, gt, trimap))


if TYPE_CHECKING:
    class _Generated(PerImageMean):
        """What :func:`per_image_metric` builds: a :class:`PerImageMean` holding its options (for the type checker)."""

        options: dict[str, Any]


def per_image_metric(class_name: str, functional: Callable[..., Tensor], update: Callable[..., tuple[Tensor, Tensor]],
                     *, higher_is_better: bool, check: Callable[..., None] | None = None,
                     plot_upper_bound: float | None = 1.0, state_prefix: str | None = None) -> type[PerImageMean]:
    """A :class:`PerImageMean` class for a functional, its options read from the functional's signature.

    For the common case — a metric that is the mean of a per-image value, ``functional(pred, gt, option=default, ...,
    validate_args=True)`` with ``update(pred, gt, *, option, ..., validate_args)`` returning ``(sum of per-image
    values, image count)`` — the class needs no code of its own: its constructor takes the functional's options (every
    parameter after ``pred`` and ``gt``, keyword-only here) with their defaults (fingerprinted into its state names),
    ``update(pred, gt)`` calls ``update``.

    Args:
        class_name: the class's name (``"MyMetric"``).
        functional: the public function (its parameters after ``pred`` and ``gt`` are the options; its docstring's
            summary, ``pred`` / ``gt`` entries, ``Returns`` and option entries make the class's docstring).
        update: the functional module's ``_x_update``.
        higher_is_better: the metric's orientation.
        check: called with the options at construction (raises on a bad option).
        plot_upper_bound: the value's upper bound (``None``: unbounded).
        state_prefix: the states' prefix (default: the functional's name).

    The class belongs to the calling module (as ``collections.namedtuple``'s): assign it to a module-level name of
    the same name there, so that pickling finds it. Its docstring has the sections every class has — "As input to
    ``forward`` and ``update``", "As output of ``forward`` and ``compute``", ``Args`` and an ``Example``, a doctest
    that checks two updates against one call of the functional (run with the calling module's doctests).

    Examples:
        >>> import torch
        >>> from nobg_metrics.functional.sod.mae import _mae_update, mae
        >>> MeanAbsoluteError = per_image_metric("MeanAbsoluteError", mae, _mae_update, higher_is_better=False)
        >>> metric = MeanAbsoluteError(normalize=False)
        >>> metric.update(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        >>> metric.compute()
        tensor(0.2750, dtype=torch.float64)
        >>> sum(line.startswith("- ``") for line in MeanAbsoluteError.__doc__.splitlines())  # pred, gt; the output
        3
    """
    parameters = [p.replace(kind=p.KEYWORD_ONLY) for p in list(inspect.signature(functional).parameters.values())[2:]
                  if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "validate_args"]
    defaults = {p.name: p.default for p in parameters}

    def __init__(self: _Generated, *, validate_args: bool = True, **kwargs: Any) -> None:
        options = {name: kwargs.pop(name, default) for name, default in defaults.items()}
        if check is not None:
            check(**options)
        PerImageMean.__init__(self, options=options, validate_args=validate_args, **kwargs)
        self.options = options

    def _per_image_sums(self: _Generated, pred: InputMaps, gt: InputMaps) -> tuple[Tensor, Tensor]:
        return update(pred, gt, **self.options, validate_args=self.validate_args)

    keyword = inspect.Parameter.KEYWORD_ONLY
    __init__.__signature__ = inspect.Signature([  # type: ignore[attr-defined]  # what inspect and the docs read
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), *parameters,
        inspect.Parameter("validate_args", keyword, default=True, annotation=bool),
        inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD, annotation=Any)])

    signature = ", ".join(f"{name}={default!r}" for name, default in defaults.items())
    namespace = {
        "__init__": __init__, "_per_image_sums": _per_image_sums, "higher_is_better": higher_is_better,
        "plot_upper_bound": plot_upper_bound, "_state_prefix": state_prefix or functional.__name__,
        "__module__": sys._getframe(1).f_globals.get("__name__", functional.__module__), "__qualname__": class_name,
        "__doc__": _class_docstring(class_name, functional, signature),
    }
    return type(class_name, (PerImageMean,), namespace)


_PRED = (":math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1], uint8 (read as ``pred / 255``) "
         "or bool; or a list of such tensors, which may differ in size.")
_GT = "the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in [0, 1] (foreground ``> 0.5``)."
_SECTIONS = ("Args", "Returns", "Raises", "Example", "Examples", "Note", "Notes")


def _docstring_parts(doc: str | None) -> tuple[str, dict[str, str], str]:
    """The first paragraph, the ``Args`` entries (``{name: description}``; ``a, b: text`` gives both names the
    text) and the ``Returns`` text of a Google-style docstring, each joined into one line."""
    summary: list[str] = []
    args: dict[str, str] = {}
    returns: list[str] = []
    names: list[str] = []
    section = "summary"
    for line in inspect.cleandoc(doc or "").splitlines():
        text = line.strip()
        if not line.startswith(" ") and text.endswith(":") and text[:-1] in _SECTIONS:
            section, names = text[:-1], []
        elif section == "summary":
            section = "body" if not text and summary else section
            summary.extend([text] if text else [])
        elif section == "Args" and text:
            entry = re.fullmatch(r" {4}(\w+(?:, \w+)*): (.*)", line)
            if entry:
                names = entry[1].split(", ")
                args.update(dict.fromkeys(names, entry[2]))
            else:
                args.update({name: f"{args[name]} {text}" for name in names})
        elif section == "Returns" and text:
            returns.append(text)
    return " ".join(summary), args, " ".join(returns)


def _class_docstring(class_name: str, functional: Callable[..., Tensor], signature: str) -> str:
    """The docstring of a :func:`per_image_metric` class, from its functional's: the functional's summary, the
    inputs (its ``pred`` and ``gt`` entries, else the input contract's), the output (its ``Returns``), the options
    (its other ``Args``) and an example that checks the class against the functional."""
    summary, args, returns = _docstring_parts(functional.__doc__)
    module, name = functional.__module__, functional.__name__
    options = list(inspect.signature(functional).parameters)[2:]
    described = [f"    {option}: {args.get(option, f'as in :func:`{module}.{name}`.')}" for option in options
                 if option != "validate_args"]
    lines = [
        summary or f":func:`{module}.{name}`.", "",
        f"The mean over images of :func:`{module}.{name}` as a ``Metric``, ``{class_name}({signature})``: the options "
        "and the value are the functional's.", "",
        "As input to ``forward`` and ``update`` the metric accepts the following input:", "",
        f"- ``pred`` (:class:`~torch.Tensor`): {args.get('pred', _PRED)}",
        f"- ``gt`` (:class:`~torch.Tensor`): {args.get('gt', _GT)}", "",
        "As output of ``forward`` and ``compute`` the metric returns the following output:", "",
        f"- ``{name}`` (:class:`~torch.Tensor`): the mean over images of the per-image values: "
        f"{returns or 'scalar float64 tensor.'}", "",
        "Args:", *described,
        "    validate_args: run the checks that force a device sync.",
        "    kwargs: passed to :class:`torchmetrics.Metric`.", "",
        "Example:",
        "    >>> import torch",
        f"    >>> from {module} import {name}",
        "    >>> pred = torch.tensor([[[0.9, 0.8, 0.1], [0.2, 0.6, 0.7]], [[0.3, 0.9, 0.4], [0.8, 0.1, 0.6]]])",
        "    >>> gt = torch.tensor([[[1, 1, 0], [0, 1, 1]], [[0, 1, 0], [1, 0, 0]]], dtype=torch.bool)",
        f"    >>> metric = {class_name}()",
        "    >>> metric.update(pred[:1], gt[:1])",
        "    >>> metric.update(pred[1:], gt[1:])",
        f"    >>> torch.equal(metric.compute(), {name}(pred, gt))  # two updates: the functional on the whole batch",
        "    True",
    ]
    return "\n".join(lines) + "\n"
