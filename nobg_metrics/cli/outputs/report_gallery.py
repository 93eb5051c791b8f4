"""The worst-images gallery of ``report.html`` (docs/statistics.md "report.html").

Per job, each image that is among the ``--worst-k`` worst of some metric, once, with the metrics it is worst in: the
RGB image (when the dataset names an image folder), the gt and the prediction as base64 PNG thumbnails, read as the
metrics read them (the alpha of a cutout, 16-bit maps as 8-bit). A thumbnail fits :data:`THUMBNAIL` px: larger
images shrink (Pillow's ``thumbnail``), small ones grow by the largest whole factor that fits, with nearest-neighbour
(a 3×5 prediction shows as 75×125 pixels of its own values, not a blur nor a dot), and every thumbnail has a dark
border (``report._CSS``), so an all-white gt stays visible on the white page. An unreadable file shows as "no gt" /
"no prediction", never fails the run.

Importable without torch or numpy (the argument parser imports the report module).
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

THUMBNAIL = 128
"""Longest side of a gallery thumbnail, in pixels (small images are enlarged towards it)."""


def thumbnail_size(width: int, height: int, box: int = THUMBNAIL) -> tuple[int, int]:
    """The size a ``width × height`` image is shown at: shrunk into ``box`` keeping its aspect, or enlarged by the
    largest whole factor that keeps it inside ``box`` (nearest-neighbour: every pixel stays a square of one value).

    Examples:
        >>> thumbnail_size(5, 3), thumbnail_size(1024, 512), thumbnail_size(1, 1000), thumbnail_size(100, 60)
        ((125, 75), (128, 64), (1, 128), (100, 60))
    """
    longest = max(width, height, 1)
    if longest > box:
        scale = box / longest
        return max(1, round(width * scale)), max(1, round(height * scale))
    factor = max(1, box // longest)
    return width * factor, height * factor


def _thumbnail(path: Path | None, kind: str) -> str | None:
    """A base64 PNG of ``path`` at :func:`thumbnail_size` (gt and prediction read as the metrics read them)."""
    if path is None:
        return None
    # Pillow and the readers (numpy, torch): not for the argument parser, which imports the report module
    from PIL import Image

    from nobg_metrics.io.errors import ReadError
    from nobg_metrics.io.images import read_mask, read_prediction

    try:
        if kind == "image":
            picture = Image.open(path).convert("RGB")
        else:
            picture = Image.fromarray(read_mask(path) if kind == "gt" else read_prediction(path))
        size = thumbnail_size(*picture.size)
        if size[0] > picture.size[0]:
            picture = picture.resize(size, Image.Resampling.NEAREST)
        else:
            picture.thumbnail(size)
        buffer = io.BytesIO()
        picture.save(buffer, format="PNG")
    except (OSError, ValueError, ReadError):  # decoration: an unreadable file is shown as such, never fails the run
        return None
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _figure(path: Path | None, kind: str, thumbnails: dict[tuple[Path | None, str], str | None]) -> str:
    data = thumbnails[(path, kind)]
    body = f'<img alt="{kind}" src="data:image/png;base64,{data}">' if data else f'<span class="note">no {kind}</span>'
    return f"<figure>{body}<figcaption>{kind}</figcaption></figure>"


def _card_files(item: Any) -> list[tuple[Path | None, str]]:
    """The files a gallery card shows: the RGB image (when the dataset has one), the gt, the prediction."""
    if item is None:
        return []
    files = [(getattr(item, "image", None), "image"), (item.gt, "gt"), (item.pred, "prediction")]
    return [(path, kind) for path, kind in files if kind != "image" or path]


def gallery(document: dict[str, Any], stats: dict[str, Any], jobs: list,
            cells: dict[str, tuple[str, Callable[[float | None], str]]]) -> list[str]:
    """The gallery's HTML parts (module notes); ``cells``: ``metric -> (title, formatter)`` as the tables print them."""
    items = {(job.dataset, job.method, item.name): item for job in jobs for item in job.items}
    per_job: dict[tuple[str, str], dict[str, list[str]]] = {}
    for worst in stats["worst"]:
        images = per_job.setdefault((worst["dataset"], worst["method"]), {})
        title, show = cells[worst["metric"]]
        for w in worst["images"]:
            images.setdefault(w["image"], []).append(f"{title} {show(w['value'])}")
    intro = (f'<p class="note">The {stats["worst_k"]} worst images per method and metric (each image shown once per '
             "method, with the metrics it is among the worst in).</p>")
    parts = ['<h2 id="worst">Worst images</h2>', intro]
    wanted = {(path, kind) for (dataset, method), images in per_job.items() for name in images
              for path, kind in _card_files(items.get((dataset, method, name)))}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # decoding releases the GIL
        # each file once: a gt is among the worst of several methods
        thumbnails = dict(zip(wanted, pool.map(lambda pair: _thumbnail(*pair), wanted)))
    for (dataset, method), images in per_job.items():
        parts += [f"<h3>{html.escape(dataset)} / {html.escape(method)}</h3>", '<div class="gallery">']
        for name, notes in images.items():
            item = items.get((dataset, method, name))
            figures = "".join(_figure(path, kind, thumbnails) for path, kind in _card_files(item))
            listed = "<br>".join(html.escape(note) for note in notes)
            parts.append(f'<div class="card"><b>{html.escape(name)}</b><br>{figures}<div class="note">{listed}</div>'
                         "</div>")
        parts.append("</div>")
    return parts
