"""mkdocs hooks: the docstrings' Sphinx roles (``:func:`x```, ``:math:`(B, H, W)```), as torchmetrics and kornia write
them, rendered as plain code on the API pages (the Markdown renderer keeps the role's name as text otherwise)."""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:py:)?(?:class|func|mod|meth|data|attr|obj|exc|math):<code>~?([^<]*)</code>")


def on_page_content(html: str, **_: Any) -> str:
    """``:func:<code>~pkg.name</code>`` -> ``<code>pkg.name</code>`` in every page's HTML."""
    return _ROLE.sub(r"<code>\1</code>", html)
