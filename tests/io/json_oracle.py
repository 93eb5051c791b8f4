"""The two sides the JSON streaming tests compare: our streamed reading of a results file and ``json.load``'s,
each as ``("values", list)`` or ``("error", the command's message)``."""

from __future__ import annotations

import json
from pathlib import Path

from nobg_metrics.io.errors import InputError
from nobg_metrics.io.json_stream import array_items


def streamed(path: Path, chunk: int) -> tuple[str, object]:
    """``array_items`` over ``path`` read ``chunk`` characters at a time."""
    try:
        return "values", [value for _, value in array_items(path, "--dt-json-file", "expected a list", chunk=chunk)]
    except InputError as error:
        return "error", str(error)


def json_load(path: Path) -> tuple[str, object]:
    """``json.load``'s reading, its error worded as the command words it."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except json.JSONDecodeError as error:
        return "error", f"--dt-json-file {path}: not valid JSON ({error})"
    if not isinstance(document, list):
        return "error", f"{path}: expected a list, got a JSON {type(document).__name__}"
    return "values", document
