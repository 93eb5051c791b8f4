"""Per-group means of the per-image values: AIM-500's SAD by type and by category, and any grouping like it.

AIM-500 (Li et al., IJCAI 2021; JizhiziLi/AIM ``core/test.py``) reports, besides the dataset means, the whole-image
SAD of each image *type* (``SO`` salient opaque, ``STM`` salient transparent/meticulous, ``NS`` non-salient) and
*category* (animal, fruit, furniture, plant, portrait, toy, transparent): the plain mean over the images of the
group, with their count. The groups come from its ``aim_category_type.json``, ``{stem: {"type": ..., "category":
...}}``. ``--categories FILE`` takes any file of that shape: every key of the entries is one grouping, every
value one group, and every metric of the run is averaged per group (``groups.md``, ``results.json["groups"]``).
Images of the run that the file does not name are counted as ungrouped, never silently dropped.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.errors import ConfigError


def read_groups(path: Path) -> dict[str, dict[str, str]]:
    """``{image stem: {grouping: group}}`` from a JSON file; a bad file is a usage error naming it.

    Examples:
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        ...     _ = handle.write('{"o_1": {"type": "SO", "category": "animal"}}')
        >>> read_groups(Path(handle.name))
        {'o_1': {'type': 'SO', 'category': 'animal'}}
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(f"--categories {path}: cannot read it as JSON ({error})") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"--categories {path}: expected an object {{image stem: {{grouping: group}}}}, "
                          f"got {type(data).__name__}")
    for stem, entry in data.items():
        if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
            raise ConfigError(f"--categories {path}: entry {stem!r} must map grouping names to group names "
                              f"(strings), e.g. {{\"type\": \"SO\"}}; got {entry!r}")
    return {str(stem): dict(entry) for stem, entry in data.items()}


def group_means(results: list[dict[str, Any]], rows: list[dict[str, Any]], metrics: list[str],
                groups: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """Per dataset / method, grouping and group: the image count and the mean of each metric over those images.

    Returns:
        rows ``{"dataset", "method", "grouping", "group", "images", "values": {metric: mean or None}}``, in the order
        of ``results``, then groupings and groups in the file's order of first appearance; a last row per dataset /
        method with ``grouping=None`` counts the images the file does not name (``values`` empty).

    Examples:
        >>> rows = [{"dataset": "D", "method": "M", "image": s, "sad": v} for s, v in (("a", 1.0), ("b", 3.0))]
        >>> out = group_means([{"dataset": "D", "method": "M"}], rows, ["sad"], {"a": {"type": "SO"},
        ...                   "b": {"type": "SO"}})
        >>> out[0]["group"], out[0]["images"], out[0]["values"]
        ('SO', 2, {'sad': 2.0})
    """
    groupings = list(dict.fromkeys(key for entry in groups.values() for key in entry))
    out = []
    for result in results:
        own = [r for r in rows if r["dataset"] == result["dataset"] and r["method"] == result["method"]]
        for grouping in groupings:
            members: dict[str, list[dict[str, Any]]] = {}
            for row in own:
                group = groups.get(row["image"], {}).get(grouping)
                if group is not None:
                    members.setdefault(group, []).append(row)
            for group, grouped in members.items():
                values = {}
                for name in metrics:
                    scored = [r[name] for r in grouped if r.get(name) is not None and math.isfinite(r[name])]
                    values[name] = sum(scored) / len(scored) if scored else None  # AIM: sum / count of the group
                out.append({"dataset": result["dataset"], "method": result["method"], "grouping": grouping,
                            "group": group, "images": len(grouped), "values": values})
        ungrouped = sum(1 for row in own if row["image"] not in groups)
        out.append({"dataset": result["dataset"], "method": result["method"], "grouping": None, "group": None,
                    "images": ungrouped, "values": {}})
    return out


def groups_markdown(grouped: list[dict[str, Any]], columns: list[tuple[str, str, Any]]) -> str:
    """``groups.md``: one table per dataset / method, a row per grouping and group, the run's columns as printed."""
    parts = ["# Per-group means (--categories)", ""]
    current = None
    for row in grouped:
        key = (row["dataset"], row["method"])
        if key != current:
            current = key
            parts += ["", f"## {row['dataset']} / {row['method']}", "",
                      "| grouping | group | images | " + " | ".join(label for _, label, _ in columns) + " |",
                      "|---|---|---:|" + "---:|" * len(columns)]
        if row["grouping"] is None:
            parts.append(f"| (not in the file) | | {row['images']} |" + " |" * len(columns))
            continue
        cells = [formatter(row["values"].get(name)) for name, _, formatter in columns]
        parts.append(f"| {row['grouping']} | {row['group']} | {row['images']} | " + " | ".join(cells) + " |")
    return "\n".join(parts).replace("\n\n\n", "\n\n") + "\n"
