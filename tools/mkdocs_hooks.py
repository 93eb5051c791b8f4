"""mkdocs hooks: the metric-names page generated from the catalog (``tools/metric_names.py``: no committed copy to
go stale), and the docstrings' Sphinx roles (``:func:`x```, ``:math:`(B, H, W)```), as torchmetrics and kornia write
them, rendered as plain code on the API pages (the Markdown renderer keeps the role's name as text otherwise)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

from mkdocs.structure.files import File, Files

_ROLE = re.compile(r":(?:py:)?(?:class|func|mod|meth|data|attr|obj|exc|math):<code>~?([^<]*)</code>")


def metric_names_tool() -> ModuleType:
    """``tools/metric_names.py`` as a module (the hooks file is loaded by path, not as a package member)."""
    spec = importlib.util.spec_from_file_location("metric_names_tool", Path(__file__).with_name("metric_names.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_files(files: Files, config: Any, **_: Any) -> Files:
    """Add the metric-names page, generated from the catalog (replacing a stray copy in docs/, if any)."""
    tool = metric_names_tool()
    stray = files.get_file_from_path(tool.PAGE)
    if stray is not None:
        files.remove(stray)
    files.append(File.generated(config, tool.PAGE, content=tool.render()))
    return files


def on_page_content(html: str, **_: Any) -> str:
    """``:func:<code>~pkg.name</code>`` -> ``<code>pkg.name</code>`` in every page's HTML."""
    return _ROLE.sub(r"<code>\1</code>", html)
