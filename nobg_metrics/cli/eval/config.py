"""What to score: datasets (gt folder, optional trimap and RGB image folders) x methods (prediction folders).

Sources of a plan, all ending in the same :class:`Plan`:

- the command line: ``--gt [NAME=]DIR --pred [NAME=]DIR ... [--trimap DIR] [--image DIR]`` (one dataset);
- our config file (JSON or YAML)::

      datasets:
        DUTS-TE: {gt: DUTS-TE/Mask, suffix: .png, trimap: null}   # or gt: {path:, prefix:, suffix:}
        COD10K: {gt: COD10K/GT, image: {path: COD10K/Image, suffix: .jpg}}   # RGB images (CCm)
      methods:
        MINet: {DUTS-TE: preds/MINet/DUTS-TE}                      # or {path:, prefix:, suffix:}
      options: {preset: sod, out: results, cache: .nobg-cache}    # any eval flag; the command line wins

  relative paths are resolved against the config file's folder; every key is checked (a misspelt key
  is an error naming it) and every value's type (paths, prefixes and suffixes are strings);
- PySODEvalToolkit's pair of JSON files (``--config datasets.json methods.json``): a dataset file
  ``{"NAME": {"image": {...}, "mask": {"path", "prefix", "suffix"}}}`` and a method file
  ``{"METHOD": {"DATASET": {"path", "prefix", "suffix"}}}``; relative paths are resolved against the
  current directory, as PySODEvalToolkit does. Its ``image`` entry is the dataset's RGB image folder.

Image folders are read only by the metrics that take the RGB image (``camouflage_context_measure``); for the
others they are never listed, so a config naming absent image folders scores masks as before.
"""

from __future__ import annotations

import difflib
import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.errors import ConfigError, InputError, closest
from nobg_metrics.cli.core.json_yaml import load_json_or_yaml
from nobg_metrics.io.folders import Source

_GENERIC_GT_NAMES = {"gt", "gts", "mask", "masks", "groundtruth", "ground_truth", "ground-truth", "labels",
                     "alpha", "alpha_copy", "alphas", "matte", "mattes"}  # the last: matting layouts
_DATASET_KEYS = ("gt", "trimap", "image", "prefix", "suffix")


@dataclass
class DatasetSpec:
    """One dataset: its gt folder, an optional trimap folder (matting) and RGB image folder (CCm)."""

    name: str
    gt: Source
    trimap: Source | None = None
    index: tuple[str, ...] | None = None
    """PySODEvalToolkit's ``index_file``: only these image stems are scored (``None``: every gt image)."""
    image: Source | None = None
    """The RGB images (``--image``, ``image``): read only when a metric of the run takes them."""


@dataclass
class Plan:
    """Datasets in order, and for each method the prediction folder of every dataset it covers."""

    datasets: list[DatasetSpec] = field(default_factory=list)
    methods: dict[str, dict[str, Source]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """What was left out on purpose (e.g. a PySODEvalToolkit method's dataset absent from the dataset JSON)."""
    options: dict[str, tuple[Any, Path, str]] = field(default_factory=dict)
    """Our config's ``options:`` (run options): ``key -> (value, config folder, where)``, applied by
    :func:`nobg_metrics.cli.eval.config_options.apply_config_options`; a flag given on the command line wins."""

    def folders(self) -> list[Path]:
        """Every input folder (outputs must never be written inside one)."""
        paths = [d.gt.path for d in self.datasets] + [d.trimap.path for d in self.datasets if d.trimap]
        return paths + [src.path for per in self.methods.values() for src in per.values()]


def split_named(value: str) -> tuple[str | None, str]:
    """``"NAME=DIR"`` -> ``(NAME, DIR)``; a bare ``DIR`` (or an existing path containing ``=``) -> ``(None, DIR)``.

    Examples:
        >>> split_named("MINet=preds/minet"), split_named("preds/u2net")
        (('MINet', 'preds/minet'), (None, 'preds/u2net'))
    """
    name, sep, path = value.partition("=")
    if sep and name and not Path(value).exists():
        return name, path
    return None, value


def resolved(path: Path) -> Path:
    """``path.resolve()``, or the absolute path where it cannot be resolved (a symlink loop)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: "Symlink loop" (Python < 3.13)
        return Path(os.path.abspath(path))


def folder_problem(path: Path) -> str | None:
    """Why ``path`` is not a folder that can be listed (``None`` when it is one).

    Examples:
        >>> folder_problem(Path("/")) is None, folder_problem(Path("/no/such/dir"))
        (True, 'does not exist')
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "is a symlink loop"
        if os.path.islink(path):
            return f"is a broken symlink (to {os.readlink(path)!r})"
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return "does not exist"
        return f"cannot be read ({error.strerror or error})"
    return None if stat.S_ISDIR(mode) else "is a file, not a folder"


def default_dataset_name(gt_dir: Path) -> str:
    """The gt folder's name, or its parent's when the folder has a generic name (``gt``, ``masks``...)."""
    path = resolved(gt_dir)
    return path.parent.name if path.name.lower() in _GENERIC_GT_NAMES else path.name


def plan_from_args(gt: str, preds: list[str], trimap: str | None, prefix: str = "", suffix: str = "",
                   image: str | None = None) -> Plan:
    """A one-dataset plan from ``--gt``, ``--pred`` (repeatable), ``--trimap``, the predictions' file-name
    ``--prefix`` / ``--suffix`` and ``--image`` (the RGB images, matched by the gt stems).

    A method is named ``NAME`` (``NAME=DIR``) or after its folder; folders of one name in different places
    (``preds/A/DIS-VD preds/B/DIS-VD``) are named after their parents (``A``, ``B``).
    """
    name, gt_path = split_named(gt)
    dataset = DatasetSpec(name or default_dataset_name(Path(gt_path)), Source(Path(gt_path)),
                          Source(Path(trimap)) if trimap else None, image=Source(Path(image)) if image else None)
    plan = Plan([dataset])
    named = [split_named(value) for value in preds]
    folder_names = [resolved(Path(path)).name for method, path in named if method is None]
    for method, path in named:
        if method is None:
            folder = resolved(Path(path))
            method = folder.parent.name if folder_names.count(folder.name) > 1 else folder.name
        if method in plan.methods:
            raise ConfigError(f"two --pred folders share the method name {method!r}; name them with NAME=DIR")
        plan.methods[method] = {dataset.name: Source(Path(path), prefix, suffix)}
    return plan


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _name(key: Any, where: str) -> str:
    """A dataset or method name: a string (or an integer, e.g. a year, taken as its digits)."""
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        raise ConfigError(f"{where}: names must be strings; got {key!r} ({_type_name(key)})")
    if not str(key):
        raise ConfigError(f"{where}: empty name")
    return str(key)


def _text(value: Any, where: str) -> str:
    """A prefix or suffix: a string (``null`` = empty)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string; got {value!r} ({_type_name(value)})")
    return value


def _path(value: Any, base: Path, where: str) -> Path:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a folder path (a string); got {value!r} ({_type_name(value)})")
    if not value.strip():
        raise ConfigError(f"{where}: empty folder path")
    return base / value


def _check_keys(value: dict, allowed: tuple[str, ...], where: str) -> None:
    unknown = [key for key in value if key not in allowed]
    if unknown:
        raise ConfigError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(repr(k) for k in unknown)}{closest(unknown[0], allowed)} "
                          f"(expected {', '.join(allowed)})")


def _mapping(value: Any, where: str, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping of {what}; got {_type_name(value)}")
    return value


def _source(value: Any, base: Path, where: str, *, path_key: str = "path") -> Source:
    """A folder: ``"DIR"`` or ``{path: DIR, prefix: ..., suffix: ...}`` (no other key)."""
    if isinstance(value, str):
        return Source(_path(value, base, where))
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a folder path or {{{path_key!r}: ..., 'prefix': ..., 'suffix': ...}}; "
                          f"got {value!r} ({_type_name(value)})")
    _check_keys(value, (path_key, "prefix", "suffix"), where)
    if path_key not in value:
        raise ConfigError(f"{where}: {path_key!r} is missing")
    return Source(_path(value[path_key], base, f"{where}.{path_key}"), _text(value.get("prefix"), f"{where}.prefix"),
                  _text(value.get("suffix"), f"{where}.suffix"))


_DATASET_SIGNS = ("mask", "depth", "edge", "index_file")
"""Keys only a PySODEvalToolkit dataset entry holds (``image`` may also be a method JSON's dataset name)."""


def _pysod_kind(data: dict) -> str | None:
    """``"datasets"``, ``"methods"`` or ``None``: which of PySODEvalToolkit's JSON files ``data`` is, told apart by
    its keys (both map names to ``{name: {"path", "prefix", "suffix"}}``).

    A dataset file is one whose entries hold a dataset key (``mask``, ``depth``, ``edge``, ``index_file``), a key
    close to one (``masks``, ``Mask``, ``msk``: named as a misspelling by the entry's key check), or all an
    ``image``; a method file maps names to mappings of mappings. The two look alike once ``mask`` is misspelt, so a
    file given with ``--dataset-json`` / ``--method-json`` is read as that kind without guessing.

    Examples:
        >>> _pysod_kind({"DIS-VD": {"image": {"path": "im"}, "masks": {"path": "gt"}}})
        'datasets'
        >>> _pysod_kind({"MINet": {"DIS-VD": {"path": "preds"}}})
        'methods'
    """
    entries = list(data.values())
    if not entries or not all(isinstance(v, dict) for v in entries):
        return None
    keys = [str(key) for entry in entries for key in entry]

    def sign(key: str) -> bool:
        return key.lower() in _DATASET_SIGNS or bool(difflib.get_close_matches(key, _DATASET_SIGNS, n=1,
                                                                                  cutoff=0.75))

    if any(sign(key) for key in keys) or all("image" in entry for entry in entries):
        return "datasets"
    if all(entry and all(isinstance(s, dict) for s in entry.values()) for entry in entries):
        return "methods"
    return None


def _dataset(entry: Any, base: Path, where: str) -> tuple[Source, Source | None, Source | None]:
    """``DIR``, ``{path, prefix, suffix}`` or ``{gt: DIR or {path, prefix, suffix}, trimap: ..., image: ..., prefix,
    suffix}``: ``(gt, trimap, image)``."""
    if not isinstance(entry, dict) or "gt" not in entry:
        return _source(entry, base, where), None, None
    _check_keys(entry, _DATASET_KEYS, where)
    gt_value = entry["gt"]
    if isinstance(gt_value, dict):
        both = [key for key in ("prefix", "suffix") if key in entry]
        if both:
            raise ConfigError(f"{where}: {', '.join(both)} given both in 'gt' and beside it; give them in one place")
        gt = _source(gt_value, base, f"{where}.gt")
    else:
        gt = Source(_path(gt_value, base, f"{where}.gt"), _text(entry.get("prefix"), f"{where}.prefix"),
                    _text(entry.get("suffix"), f"{where}.suffix"))
    trimap, image = entry.get("trimap"), entry.get("image")
    return (gt, None if trimap is None else _source(trimap, base, f"{where}.trimap"),
            None if image is None else _source(image, base, f"{where}.image"))


def _merge_ours(plan: Plan, data: dict, base: Path, where: str) -> None:
    unknown = set(data) - {"datasets", "methods", "options"}
    if unknown:
        first = min(map(str, unknown))
        raise ConfigError(f"{where}: unknown top-level keys {sorted(map(str, unknown))} "
                          "(expected 'datasets', 'methods', 'options')"
                          f"{closest(first, ('datasets', 'methods', 'options'))}")
    options = data.get("options")
    if options is not None:
        if not isinstance(options, dict):
            raise ConfigError(f"{where} options: must map option names to values; got {_type_name(options)}")
        for key, value in options.items():
            plan.options[str(key)] = (value, base, f"{where} options.{key}")
    for name, entry in _mapping(data.get("datasets"), f"{where} datasets", "dataset names to folders").items():
        label = f"{where} datasets.{name}"
        gt, trimap, image = _dataset(entry, base, label)
        plan.datasets.append(DatasetSpec(_name(name, label), gt, trimap, image=image))
    for method, per_dataset in _mapping(data.get("methods"), f"{where} methods", "method names").items():
        label = f"{where} methods.{method}"
        if not isinstance(per_dataset, dict):
            raise ConfigError(f"{label}: must map dataset names to folders; got {_type_name(per_dataset)}")
        sources = plan.methods.setdefault(_name(method, label), {})
        for dataset, value in per_dataset.items():
            sources[_name(dataset, f"{label}.{dataset}")] = _source(value, base, f"{label}.{dataset}")


def plan_from_configs(paths: list[Path], kinds: list[str | None] | None = None) -> Plan:
    """Merge one or more config files (ours, or PySODEvalToolkit's dataset + method JSON) into a plan.

    ``kinds``: per file, ``"datasets"`` (given as ``--dataset-json``), ``"methods"`` (``--method-json``) or ``None``
    (``--config``: ours, or a PySODEvalToolkit file told apart by its keys, :func:`_pysod_kind`).
    """
    plan = Plan()
    pysod_entries: set[tuple[str, str]] = set()
    for path, given in zip(paths, kinds or [None] * len(paths)):
        problem = folder_problem(path)
        if problem is None:
            raise ConfigError(f"config file {path} is a folder")
        if problem != "is a file, not a folder":
            raise ConfigError(f"config file not found: {path} ({problem})")
        data = load_json_or_yaml(path)
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping at the top level")
        kind = "ours" if "datasets" in data or "methods" in data else given or _pysod_kind(data)
        if kind == "ours":
            _merge_ours(plan, data, path.parent, str(path))
        elif kind == "datasets":
            for name, entry in data.items():
                if not isinstance(entry, dict):
                    raise ConfigError(f"{path} {name}: a dataset entry must map 'mask' (and 'image', ...) to folders; "
                                      f"got {_type_name(entry)}")
                plan.datasets.append(_pysod_dataset(name, entry, path))
        elif kind == "methods":
            for method, per_dataset in data.items():
                if not isinstance(per_dataset, dict):
                    raise ConfigError(f"{path} {method}: a method entry must map dataset names to "
                                      f"{{'path', 'prefix', 'suffix'}}; got {_type_name(per_dataset)}")
                for dataset, value in per_dataset.items():
                    where = f"{path} {method}.{dataset}"
                    plan.methods.setdefault(_name(method, where), {})[_name(dataset, where)] = \
                        _source(value, Path(), where)
                    pysod_entries.add((str(method), str(dataset)))
        else:
            raise ConfigError(f"{path}: neither a nobg-metrics config ('datasets'/'methods') nor a "
                              f"PySODEvalToolkit dataset or method JSON")
    known = {dataset.name for dataset in plan.datasets}
    for method, dataset in sorted(pysod_entries):
        if dataset not in known:  # PySODEvalToolkit evaluates the datasets both files name; so do we, and say it
            del plan.methods[method][dataset]
            plan.notes.append(f"method {method!r} names dataset {dataset!r}, which no dataset JSON defines: skipped")
    for method in [m for m, per in plan.methods.items() if not per]:
        del plan.methods[method]
    return plan


_PYSOD_DATASET_KEYS = ("image", "mask", "depth", "edge", "index_file")
"""The keys of a PySODEvalToolkit dataset entry: we read ``mask``, ``index_file`` and ``image`` (the RGB images, for
the metrics that take them); ``depth`` and ``edge`` name inputs of other tasks that no metric here reads."""


def _pysod_dataset(name: Any, entry: dict, path: Path) -> DatasetSpec:
    where = f"{path} {name}"
    _check_keys(entry, _PYSOD_DATASET_KEYS, where)
    if "mask" not in entry:
        raise ConfigError(f"{where}: 'mask' is missing (the gt folder: {{'path': ..., 'prefix': ..., 'suffix': ...}})")
    index = None
    if entry.get("index_file") is not None:
        index_path = Path(_text(entry["index_file"], f"{where}.index_file"))
        try:
            lines = index_path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"{where}.index_file {index_path}: cannot be read ({error})") from None
        index = tuple(dict.fromkeys(Path(line.strip()).stem for line in lines if line.strip()))
    image = None if entry.get("image") is None else _source(entry["image"], Path(), f"{where}.image")
    return DatasetSpec(_name(name, where), _source(entry["mask"], Path(), f"{where}.mask"), index=index, image=image)


def check_plan(plan: Plan) -> None:
    """Reject plans with nothing to score, unknown dataset names or absent folders (ConfigError), and
    folders that exist but cannot be read (InputError)."""
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
        problem = folder_problem(folder)
        if problem is not None and problem.startswith("cannot be read"):
            raise InputError(f"input folder {folder} {problem}")
        if problem is not None:
            raise ConfigError(f"folder not found: {folder} ({problem})")


def filter_plan(plan: Plan, include_datasets: list[str] | None, exclude_datasets: list[str] | None,
                include_methods: list[str] | None, exclude_methods: list[str] | None) -> None:
    """PySODEvalToolkit's ``--include-datasets / --exclude-datasets / --include-methods / --exclude-methods``:
    keep (or drop) the named ones; a name the plan does not hold is a usage error naming the closest one."""
    datasets = [d.name for d in plan.datasets]
    for flag, names, valid in (("--include-datasets", include_datasets, datasets),
                               ("--exclude-datasets", exclude_datasets, datasets),
                               ("--include-methods", include_methods, list(plan.methods)),
                               ("--exclude-methods", exclude_methods, list(plan.methods))):
        for name in names or ():
            if name not in valid:
                raise ConfigError(f"{flag}: {name!r} is not in the plan{closest(name, valid)} (have {valid})")
    dropped = {d.name for d in plan.datasets if (include_datasets is not None and d.name not in include_datasets)
               or d.name in (exclude_datasets or ())}
    plan.datasets[:] = [d for d in plan.datasets if d.name not in dropped]
    for method in list(plan.methods):
        if (include_methods is not None and method not in include_methods) or method in (exclude_methods or ()):
            del plan.methods[method]
            continue
        if dropped:
            plan.methods[method] = {k: v for k, v in plan.methods[method].items() if k not in dropped}
            if not plan.methods[method]:
                del plan.methods[method]
