"""A helper process of ``nobg-metrics instances`` and the pipe it talks through (torch-free).

:class:`ForkedHelper` forks a process that runs a function and writes messages into a pipe; the scoring process
reads them (:meth:`ForkedHelper.next`). A message is a pickle whose numpy arrays travel out of band (protocol 5:
written and read as raw bytes, never copied into the pickle). A helper's failure comes as an ``("error", exc)``
message and is raised where it is read: an :class:`~nobg_metrics.io.errors.InputError` with its own message, any
other exception as a ``RuntimeError`` holding its traceback.

Stopping: the helper ignores SIGINT (the scoring process handles the terminal's interrupt and stops it), dies with
the scoring process (``PR_SET_PDEATHSIG``), and ends quietly on a broken pipe (in any of its threads);
:meth:`ForkedHelper.close` kills and reaps it when the run ends for any reason. The helper leaves by ``os._exit``
(no atexit handler or buffer inherited from the scoring process runs twice).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pickle
import signal
import struct
import threading
import traceback
from collections.abc import Callable
from io import BufferedReader, FileIO
from typing import Any, BinaryIO, TypeVar

import numpy as np

from nobg_metrics.cli.core.signals import die_with_parent
from nobg_metrics.io.coco.annotations import GtImage
from nobg_metrics.io.coco.results import LVIS_MAX_DETS, Results, load_results
from nobg_metrics.io.errors import InputError

_HEAD = struct.Struct("<QI")
"""A message's head: the pickle's length and the number of out-of-band buffers (their lengths follow, ``<Q`` each)."""

_Source = TypeVar("_Source", bound="ForkedSource")

PIPE_BYTES = 1 << 20
"""The pipe's capacity asked for (Linux ``F_SETPIPE_SZ``; the system's maximum by default)."""


def send(out: BinaryIO, message: Any) -> None:
    """Write one message (module notes)."""
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


def receive(source: BufferedReader) -> Any:
    """Read one message (``EOFError`` at the end of the pipe)."""
    meta_length, count = _HEAD.unpack(_read_exactly(source, _HEAD.size))
    lengths = struct.unpack(f"<{count}Q", _read_exactly(source, 8 * count)) if count else ()
    meta = _read_exactly(source, meta_length)
    return pickle.loads(meta, buffers=[_read_exactly(source, length) for length in lengths])


def portable(error: BaseException) -> BaseException:
    """``error`` as the scoring process should raise it: an input error as it is, anything else with its traceback."""
    if isinstance(error, InputError):
        return InputError(str(error))
    return RuntimeError("the helper process failed:\n" + "".join(traceback.format_exception(error)))


def _set_pipe_size(fd: int) -> None:
    import fcntl  # Linux only, as the helpers

    if hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):  # a smaller system maximum: the default size works too
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def _helper_main(main: Callable[[BinaryIO], None], write_fd: int, parent: int) -> None:
    """The helper: ``main(pipe)``, then exit (never returns)."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the scoring process handles the interrupt and stops us
        for name in ("SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        die_with_parent(parent)
        threading.excepthook = lambda _: os._exit(1)  # a writer thread's broken pipe: end, without a traceback
        main(os.fdopen(write_fd, "wb", buffering=PIPE_BYTES))
    except BaseException:  # noqa: BLE001 - a broken pipe: the scoring process has gone
        code = 1
    finally:
        os._exit(code)


class ForkedHelper:
    """A forked process running ``main(pipe)`` (module notes); the scoring process reads its messages."""

    def __init__(self, main: Callable[[BinaryIO], None]) -> None:
        read_fd, write_fd = os.pipe()
        _set_pipe_size(write_fd)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _helper_main(main, write_fd, parent)
        os.close(write_fd)
        self.pid: int | None = pid
        self._source: BufferedReader | None = BufferedReader(FileIO(read_fd, "rb"), PIPE_BYTES)

    def next(self) -> Any:
        """The next message (raises the helper's error, or ``RuntimeError`` if it ended without a word)."""
        assert self._source is not None
        try:
            message = receive(self._source)
        except EOFError:
            raise RuntimeError("the helper process stopped unexpectedly") from None
        if message[0] == "error":
            raise message[1]
        return message

    def close(self) -> None:
        """Stop the helper if it still runs, and reap it."""
        if self._source is not None:
            self._source.close()
            self._source = None
        if self.pid is not None:
            if os.waitpid(self.pid, os.WNOHANG) == (0, 0):  # still running (its run cut short): stop it
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            self.pid = None


class ForkedSource(ForkedHelper):
    """A helper that first sends the files' index (``("header", gt, results, image ids)``): the scoring process's
    :class:`~nobg_metrics.cli.instances.reading.ImageSource` attributes once :meth:`open` has received it
    (``results.per_image`` is empty: the detections travel per image)."""

    def __init__(self, main: Callable[[BinaryIO], None], args: argparse.Namespace) -> None:
        super().__init__(main)
        self.gt: Any = None
        self.results: Results | None = None
        self.todo: list[GtImage] = []
        self.args = args

    def open(self: _Source) -> _Source:
        """Receive the files' index (raises what reading them raised)."""
        _, self.gt, self.results, ids = self.next()
        self.todo = [self.gt.by_id[image_id] for image_id in ids]
        return self

    def full_results(self) -> Results:
        """The results file with every detection (read again here: the report page draws some of their masks)."""
        args = self.args
        return load_results(args.dt_json_file, self.gt, lvis=args.lvis, max_dets=args.max_dets or LVIS_MAX_DETS,
                            strict=getattr(args, "strict", False))
