"""What to score: datasets (gt folder, optional trimap folder) x methods (prediction folders).

Sources of a plan, all ending in the same :class:`Plan`:

- the command line: ``--gt [NAME=]DIR --pred [NAME=]DIR ... [--trimap DIR]`` (one dataset);
- our config file (JSON or YAML)::

      datasets:
        DUTS-TE: {gt: DUTS-TE/Mask, suffix: .png, trimap: null}   # or gt: {path:, prefix:, suffix:}
      methods:
        MINet: {DUTS-TE: preds/MINet/DUTS-TE}                      # or {path:, prefix:, suffix:}

  relative paths are resolved against the config file's folder;
- PySODEvalToolkit's pair of JSON files (``--config datasets.json methods.json``): a dataset file
  ``{"NAME": {"image": {...}, "mask": {"path", "prefix", "suffix"}}}`` and a method file
  ``{"METHOD": {"DATASET": {"path", "prefix", "suffix"}}}``; relative paths are resolved against the
  current directory, as PySODEvalToolkit does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nobg_metrics.cli.files import Source

_GENERIC_GT_NAMES = {"gt", "gts", "mask", "masks", "groundtruth", "ground_truth", "ground-truth", "labels"}


class ConfigError(Exception):
    """A config or command line that cannot describe a run (message is shown without a traceback)."""


@dataclass
class DatasetSpec:
    """One dataset: its gt folder and an optional trimap folder (matting)."""

    name: str
    gt: Source
    trimap: Source | None = None


@dataclass
class Plan:
    """Datasets in order, and for each method the prediction folder of every dataset it covers."""

    datasets: list[DatasetSpec] = field(default_factory=list)
    methods: dict[str, dict[str, Source]] = field(default_factory=dict)

    def folders(self) -> list[Path]:
        """Every input folder (outputs must never be written inside one)."""
        paths = [d.gt.path for d in self.datasets] + [d.trimap.path for d in self.datasets if d.trimap]
        return paths + [src.path for per in self.methods.values() for src in per.values()]


def split_named(value: str) -> tuple[str | None, str]:
    """``"NAME=DIR"`` -> ``(NAME, DIR)``; a bare ``DIR`` (or an existing path containing ``=``) -> ``(None, DIR)``.

    Example:
        >>> split_named("MINet=preds/minet"), split_named("preds/u2net")
        (('MINet', 'preds/minet'), (None, 'preds/u2net'))
    """
    name, sep, path = value.partition("=")
    if sep and name and not Path(value).exists():
        return name, path
    return None, value


def default_dataset_name(gt_dir: Path) -> str:
    """The gt folder's name, or its parent's when the folder has a generic name (``gt``, ``masks``...)."""
    resolved = gt_dir.resolve()
    return resolved.parent.name if resolved.name.lower() in _GENERIC_GT_NAMES else resolved.name


def plan_from_args(gt: str, preds: list[str], trimap: str | None) -> Plan:
    """A one-dataset plan from ``--gt``, ``--pred`` (repeatable) and ``--trimap``."""
    name, gt_path = split_named(gt)
    dataset = DatasetSpec(name or default_dataset_name(Path(gt_path)), Source(Path(gt_path)),
                          Source(Path(trimap)) if trimap else None)
    plan = Plan([dataset])
    for value in preds:
        method, path = split_named(value)
        method = method or Path(path).resolve().name
        if method in plan.methods:
            raise ConfigError(f"two --pred folders share the method name {method!r}; name them with NAME=DIR")
        plan.methods[method] = {dataset.name: Source(Path(path))}
    return plan


def _load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise ConfigError(f"{path}: YAML configs need PyYAML (pip install 'nobg_metrics[yaml]')") from None
        return yaml.safe_load(text)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON ({error})") from None


def _source(value: Any, base: Path, where: str, *, path_key: str = "path") -> Source:
    if isinstance(value, str):
        return Source(base / value)
    if not isinstance(value, dict) or not isinstance(value.get(path_key), str):
        raise ConfigError(f"{where}: expected a folder path or {{{path_key!r}: ..., 'prefix': ..., 'suffix': ...}}")
    return Source(base / value[path_key], str(value.get("prefix") or ""), str(value.get("suffix") or ""))


def _is_pysod_datasets(data: dict) -> bool:
    return bool(data) and all(isinstance(v, dict) and "mask" in v for v in data.values())


def _is_pysod_methods(data: dict) -> bool:
    return bool(data) and all(
        isinstance(v, dict) and v and all(isinstance(s, dict) and "path" in s for s in v.values())
        for v in data.values()
    )


def _merge_ours(plan: Plan, data: dict, base: Path, where: str) -> None:
    unknown = set(data) - {"datasets", "methods"}
    if unknown:
        raise ConfigError(f"{where}: unknown top-level keys {sorted(unknown)} (expected 'datasets', 'methods')")
    for name, entry in (data.get("datasets") or {}).items():
        if isinstance(entry, dict) and "gt" in entry:
            gt_value = entry["gt"]
            gt = _source(gt_value, base, f"{where} datasets.{name}.gt") if isinstance(gt_value, dict) else \
                Source(base / gt_value, str(entry.get("prefix") or ""), str(entry.get("suffix") or ""))
            trimap = _source(entry["trimap"], base, f"{where} datasets.{name}.trimap") if entry.get("trimap") else None
        else:
            gt, trimap = _source(entry, base, f"{where} datasets.{name}"), None
        plan.datasets.append(DatasetSpec(str(name), gt, trimap))
    for method, per_dataset in (data.get("methods") or {}).items():
        if not isinstance(per_dataset, dict):
            raise ConfigError(f"{where}: methods.{method} must map dataset names to folders")
        sources = plan.methods.setdefault(str(method), {})
        for dataset, value in per_dataset.items():
            sources[str(dataset)] = _source(value, base, f"{where} methods.{method}.{dataset}")


def plan_from_configs(paths: list[Path]) -> Plan:
    """Merge one or more config files (ours, or PySODEvalToolkit's dataset + method JSON) into a plan."""
    plan = Plan()
    for path in paths:
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        data = _load(path)
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping at the top level")
        if "datasets" in data or "methods" in data:
            _merge_ours(plan, data, path.parent, str(path))
        elif _is_pysod_datasets(data):
            for name, entry in data.items():
                plan.datasets.append(DatasetSpec(str(name), _source(entry["mask"], Path(), f"{path} {name}.mask")))
        elif _is_pysod_methods(data):
            for method, per_dataset in data.items():
                for dataset, value in per_dataset.items():
                    plan.methods.setdefault(str(method), {})[str(dataset)] = \
                        _source(value, Path(), f"{path} {method}.{dataset}")
        else:
            raise ConfigError(f"{path}: neither a nobg-metrics config ('datasets'/'methods') nor a "
                              f"PySODEvalToolkit dataset or method JSON")
    return plan


def check_plan(plan: Plan) -> None:
    """Reject plans with nothing to score, unknown dataset names or absent folders."""
    if not plan.datasets:
        raise ConfigError("no dataset given (use --gt DIR or a config with datasets)")
    if not plan.methods:
        raise ConfigError("no method given (use --pred DIR or a config with methods)")
    names = [d.name for d in plan.datasets]
    if len(set(names)) != len(names):
        raise ConfigError(f"dataset names must be unique; got {names}")
    for method, per_dataset in plan.methods.items():
        unknown = sorted(set(per_dataset) - set(names))
        if unknown:
            raise ConfigError(f"method {method!r} names unknown datasets {unknown}; datasets are {names}")
    for folder in plan.folders():
        if not folder.is_dir():
            raise ConfigError(f"folder not found: {folder}")
