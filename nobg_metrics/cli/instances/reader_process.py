"""``nobg-metrics instances --workers 1``: the files read and the masks decoded in a second process, ahead of the
scoring (docs/performance.md "Results files at COCO scale").

The command forks this process before it imports torch; while the scoring process loads torch (about a second) and
then scores, this one reads the annotation and results files and decodes each image's segmentations with numpy
(:class:`~nobg_metrics.cli.instances.reading.Reading`, the same code the scoring process runs with ``--workers
0``), and sends them over a pipe in scoring order: first the files' index (the annotation file, the results file's
counts, notes and warnings, the images to score), then one message per image. A message is a pickle whose numpy
arrays travel out of band (protocol 5: the runs are written and read as raw bytes, never copied into the pickle).
A writer thread sends while the main thread decodes, at most :data:`AHEAD` images ahead (memory stays bounded by a
few images' runs, not the file).

What the scoring process gets is what it would have read itself: the same objects, the same errors (an
:class:`~nobg_metrics.io.errors.InputError` raised here is raised there, with its message), in the same order.

Stopping: this process ignores SIGINT (the scoring process handles the terminal's interrupt and stops it), dies
with the scoring process (``PR_SET_PDEATHSIG``), and ends on a broken pipe; the scoring process kills and reaps it
when the run ends for any reason (:meth:`ForkedReading.close`). Linux only (fork without exec, before torch is
loaded); elsewhere the scoring process reads the files itself. Importable without torch.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import pickle
import queue
import signal
import struct
import sys
import threading
import traceback
from collections.abc import Iterator
from io import BufferedReader, FileIO
from typing import Any, BinaryIO

import numpy as np

from nobg_metrics.cli.core.signals import die_with_parent
from nobg_metrics.cli.core.threads import usable_cores
from nobg_metrics.cli.instances.reading import ImageData, Reading
from nobg_metrics.io.coco.annotations import GtImage
from nobg_metrics.io.coco.results import LVIS_MAX_DETS, Results, load_results
from nobg_metrics.io.errors import InputError

AHEAD = 32
"""Images decoded and not yet sent that the reading process may hold (then it waits for the scoring process)."""

_HEAD = struct.Struct("<QI")
"""A message's head: the pickle's length and the number of out-of-band buffers (their lengths follow, ``<Q`` each)."""

PIPE_BYTES = 1 << 20
"""The pipe's capacity asked for (Linux ``F_SETPIPE_SZ``; the system's maximum by default)."""


def wanted(args: argparse.Namespace) -> bool:
    """Whether this run reads in a second process: ``--workers`` 1 (``auto``: where two cores or more are usable),
    on Linux, before torch is loaded in this process, not ``--cityscapes``."""
    choice = getattr(args, "workers", "auto")
    if choice == "0" or getattr(args, "cityscapes", False):
        return False
    if not sys.platform.startswith("linux") or "torch" in sys.modules:
        return False
    return choice == "1" or usable_cores() >= 2


def _send(out: BinaryIO, message: Any) -> None:
    buffers: list[pickle.PickleBuffer] = []
    meta = pickle.dumps(message, protocol=5, buffer_callback=buffers.append)
    raws = [buffer.raw() for buffer in buffers]
    out.write(_HEAD.pack(len(meta), len(raws)) + struct.pack(f"<{len(raws)}Q", *(raw.nbytes for raw in raws)))
    out.write(meta)
    for raw in raws:
        out.write(raw)
    out.flush()


def _read_exactly(source: BufferedReader, size: int) -> memoryview:
    view, filled = memoryview(np.empty(size, dtype=np.uint8).data), 0  # (not a bytearray: no zero-filling pass)
    while filled < size:
        got = source.readinto(view[filled:])
        if not got:
            raise EOFError
        filled += got
    return view


def _receive(source: BufferedReader) -> Any:
    meta_length, count = _HEAD.unpack(_read_exactly(source, _HEAD.size))
    lengths = struct.unpack(f"<{count}Q", _read_exactly(source, 8 * count)) if count else ()
    meta = _read_exactly(source, meta_length)
    return pickle.loads(meta, buffers=[_read_exactly(source, length) for length in lengths])


def _child(args: argparse.Namespace, write_fd: int, parent: int) -> None:
    """The reading process: everything into the pipe, then exit (never returns)."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the scoring process handles the interrupt and stops us
        for name in ("SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        die_with_parent(parent)
        out = os.fdopen(write_fd, "wb", buffering=PIPE_BYTES)
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
            pending.put(("error", _portable(error)))
        pending.put(None)
        writer.join()
    except BaseException:  # noqa: BLE001 - a broken pipe: the scoring process has gone
        code = 1
    finally:
        os._exit(code)  # no atexit handlers or buffers inherited from the scoring process


def narrowed(data: ImageData) -> ImageData:
    """``data`` with its decoded runs as int32 where every position fits (half the bytes through the pipe; the
    scoring process widens them again, :func:`~nobg_metrics.io.coco.masks.forms_intervals`)."""
    runs = data.forms.string_runs
    if runs is not None and data.forms.height * data.forms.width < 2**31 and data.forms.count < 2**31:
        data.forms.string_runs = tuple(array.astype(np.int32) for array in runs)  # type: ignore[assignment]
    return data


def _write_all(out: BinaryIO, pending: queue.Queue[Any]) -> None:
    try:
        while (message := pending.get()) is not None:
            _send(out, message)
        out.close()
    except OSError:
        os._exit(1)  # the scoring process closed the pipe: nothing left to read for


def _portable(error: BaseException) -> BaseException:
    """``error`` as the scoring process should raise it: an input error as it is, anything else with its traceback."""
    if isinstance(error, InputError):
        return InputError(str(error))
    return RuntimeError("the reading process failed:\n" + "".join(traceback.format_exception(error)))


class ForkedReading:
    """A :class:`~nobg_metrics.cli.instances.reading.Reading` run in a forked process (module notes): the same
    attributes once :meth:`open` has received the files' index (``results.per_image`` is empty: the detections
    come with each image)."""

    def __init__(self, args: argparse.Namespace) -> None:
        read_fd, write_fd = os.pipe()
        _set_pipe_size(write_fd)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _child(args, write_fd, parent)
        os.close(write_fd)
        self.pid: int | None = pid
        self._source: BufferedReader | None = BufferedReader(FileIO(read_fd, "rb"), PIPE_BYTES)
        self.gt: Any = None
        self.results: Results | None = None
        self.todo: list[GtImage] = []
        self.args = args

    def _next(self) -> Any:
        assert self._source is not None
        try:
            message = _receive(self._source)
        except EOFError:
            raise RuntimeError("the reading process stopped unexpectedly") from None
        if message[0] == "error":
            raise message[1]
        return message

    def open(self) -> ForkedReading:
        """Receive the files' index (raises what reading them raised)."""
        _, self.gt, self.results, ids = self._next()
        self.todo = [self.gt.by_id[image_id] for image_id in ids]
        return self

    def images(self) -> Iterator[tuple[GtImage, ImageData]]:
        """Each image of :attr:`todo` and its data, as the reading process sends them."""
        for image in self.todo:
            message = self._next()
            if message[0] != "image" or message[1].image_id != image.id:
                raise RuntimeError(f"the reading process sent {message[0]!r} where image {image.id} was due")
            yield image, message[1]

    def full_results(self) -> Results:
        """The results file with every detection (read again here: the report page draws some of their masks)."""
        args = self.args
        return load_results(args.dt_json_file, self.gt, lvis=args.lvis, max_dets=args.max_dets or LVIS_MAX_DETS,
                            strict=getattr(args, "strict", False))

    def close(self) -> None:
        """Stop the reading process if it still runs, and reap it."""
        if self._source is not None:
            self._source.close()
            self._source = None
        if self.pid is not None:
            if os.waitpid(self.pid, os.WNOHANG) == (0, 0):  # still running (its run cut short): stop it
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            self.pid = None


def _set_pipe_size(fd: int) -> None:
    import fcntl  # Linux only, as this process

    if hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):  # a smaller system maximum: the default size works too
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
