"""``nobg-metrics instances``' helper process that reads the files and decodes the masks ahead of the scoring
(docs/performance.md "Results files at COCO scale"), and the choice of helper for a run.

The command forks the helper before it imports torch; while the scoring process loads torch (about a second) and
then scores, the helper reads the annotation and results files and decodes each image's segmentations with numpy
(:class:`~nobg_metrics.cli.instances.reading.Reading`, the same code the scoring process runs with ``--workers
0``), and sends them through the pipe (:mod:`~nobg_metrics.cli.instances.pipe_messages`) in scoring order: first the
files' index (the annotation file, the results file's counts, notes and warnings, the images to score), then one
message per image. A writer thread sends while the main thread decodes, at most :data:`AHEAD` images ahead (memory
stays bounded by a few images' runs, not the file). On CPU a plain run shares the scoring instead
(:mod:`~nobg_metrics.cli.instances.shared_scoring`).

What the scoring process gets is what it would have read itself: the same objects, the same errors, in the same
order. Linux only (fork without exec, before torch is loaded); elsewhere the scoring process reads the files itself.
Importable without torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import os
import queue
import sys
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np

from nobg_metrics.cli.core.threads import free_cores, usable_cores
from nobg_metrics.cli.instances.pipe_messages import ForkedSource, portable, send
from nobg_metrics.cli.instances.reading import ImageData, Reading
from nobg_metrics.io.coco.annotations import GtImage

AHEAD = 32
"""Images decoded and not yet sent that the reading process may hold (then it waits for the scoring process)."""


def helper_kind(args: argparse.Namespace) -> str | None:
    """The helper process of this run: ``"share"`` (a second scoring process,
    :mod:`~nobg_metrics.cli.instances.shared_scoring`) on CPU without ``--errors`` / ``--bootstrap`` /
    ``--compare`` where two cores or more are free of other processes; ``"read"`` (a reading process, this module)
    otherwise; ``None`` (the scoring process reads) with
    ``--workers 0``, ``--cityscapes``, off Linux, where torch is loaded already, under ``torchrun``, or with ``--workers
    auto`` on fewer than two usable cores."""
    choice = getattr(args, "workers", "auto")
    if choice == "0" or getattr(args, "cityscapes", False):
        return None
    if not sys.platform.startswith("linux") or "torch" in sys.modules or int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return None  # (under torchrun every rank would fork one)
    if choice == "auto" and usable_cores() < 2:
        return None
    extras = any(getattr(args, name, None) is not None for name in ("errors", "bootstrap", "compare"))
    if extras or not _cpu_only(getattr(args, "device", "auto")) or free_cores() < 2:
        return "read"  # (a busy machine: a second process loading torch would take the one free core's time)
    return "share"


def _cpu_only(device: str) -> bool:
    """``--device`` scores on the CPU: ``cpu``, or ``auto`` on a machine without a GPU device node (torch, which
    would tell for sure, is not loaded yet)."""
    return device == "cpu" or (device == "auto" and not glob.glob("/dev/nvidia[0-9]*") and not glob.glob("/dev/kfd"))


def narrowed(data: ImageData) -> ImageData:
    """``data`` with its decoded runs as int32 where every position fits (half the bytes through the pipe; the
    scoring process widens them again, :func:`~nobg_metrics.io.coco.masks.forms_intervals`)."""
    runs = data.forms.string_runs
    if runs is not None and data.forms.height * data.forms.width < 2**31 and data.forms.count < 2**31:
        data.forms.string_runs = tuple(array.astype(np.int32) for array in runs)  # type: ignore[assignment]
    return data


def _read_all(args: argparse.Namespace, out: BinaryIO) -> None:
    """The reading process: the files' index, then each image's data, into the pipe."""
    pending: queue.Queue[Any] = queue.Queue(maxsize=AHEAD)
    writer = threading.Thread(target=_write_all, args=(out, pending), daemon=True)
    writer.start()
    try:
        reading = Reading(args)
        results = dataclasses.replace(reading.results, per_image={})  # the detections travel per image
        pending.put(("header", reading.gt, results, [image.id for image in reading.todo]))
        for _, data in reading.images():
            pending.put(("image", narrowed(data)))
        pending.put(("end",))
    except BaseException as error:  # noqa: BLE001 - every failure is the scoring process's to report
        pending.put(("error", portable(error)))
    pending.put(None)
    writer.join()


def _write_all(out: BinaryIO, pending: queue.Queue[Any]) -> None:
    while (message := pending.get()) is not None:
        send(out, message)
    out.close()


class ForkedReading(ForkedSource):
    """A :class:`~nobg_metrics.cli.instances.reading.Reading` run in a forked process (module notes): the same
    attributes once :meth:`open` has received the files' index (``results.per_image`` is empty: the detections
    come with each image)."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(lambda out: _read_all(args, out), args)

    def images(self) -> Iterator[tuple[GtImage, ImageData]]:
        """Each image of :attr:`todo` and its data, as the reading process sends them."""
        for image in self.todo:
            message = self.next()
            if message[0] != "image" or message[1].image_id != image.id:
                raise RuntimeError(f"the reading process sent {message[0]!r} where image {image.id} was due")
            yield image, message[1]
