"""``nobg-metrics instances --workers 1`` on CPU: a second scoring process shares the images with the first
(docs/performance.md "Results files at COCO scale").

The command forks the helper before it imports torch. The helper reads the annotation and results files and sends
their index (:mod:`~nobg_metrics.cli.instances.pipe_messages`); then the two processes share the images to score, in
id order ``0 .. n - 1``, through :class:`~nobg_metrics.cli.instances.claims.Claims`: the scoring process takes them
from the front, the helper from the back, one at a time, until they meet — whichever is faster (it loaded torch
earlier, its core is less busy) takes more. The helper sends each image's detections, front first, for the scoring
process to decode and score as it always does; meanwhile it loads torch itself and scores the images it takes from
the back with its own :class:`nobg_metrics.MeanAveragePrecision` (built from the same flags), which it sends when
the two have met. The scoring process adds it to its own (``merge_state``: the incoming records follow its own)
before ``compute()``.

The values are those of one process scoring every image, bit for bit: a record carries its image's id, and AP
orders detections by score, then image id, then rank in the image, whatever order the records came in (the tests
check every value and results.json byte for byte). An input error is raised as one process would raise it: the
scoring process's images all come before the helper's, so its own error comes first, else the helper's.

Used for plain runs on CPU (:func:`~nobg_metrics.cli.instances.reader_process.helper_kind`); ``--errors``,
``--bootstrap`` and ``--compare`` read every image in one process (the reading helper decodes ahead instead).
Importable without torch (the helper imports the scoring half once it has sent the files' index).
"""

from __future__ import annotations

import argparse
import dataclasses
import queue
import sys
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

from nobg_metrics.cli.core.startup import collector_paused
from nobg_metrics.cli.instances.claims import Claims
from nobg_metrics.cli.instances.pipe_messages import ForkedSource, portable, send
from nobg_metrics.cli.instances.reading import ImageData, Reading, read_image
from nobg_metrics.io.coco.annotations import GtImage


def _share(args: argparse.Namespace, claims: Claims, out: BinaryIO, torch_forked: bool = False) -> None:
    """The helper: the files' index, the front images' detections (a writer thread), its own share's metric."""
    pending: queue.Queue[Any] = queue.Queue()
    try:
        reading = Reading(args)
    except BaseException as error:  # noqa: BLE001 - every failure is the scoring process's to report
        send(out, ("error", portable(error)))
        out.close()
        return
    claims.set_count(len(reading.todo))
    results = dataclasses.replace(reading.results, per_image={})  # the detections travel per image
    header = ("header", reading.gt, results, [image.id for image in reading.todo])
    writer = threading.Thread(target=_send_front, args=(out, header, reading, claims, pending), daemon=True)
    writer.start()  # (the pipe fills while the scoring process loads torch: a thread waits, not this one)
    try:
        with collector_paused():  # torch: only now, while the scoring process scores its first images
            from nobg_metrics.cli.instances.back_share import score_from_the_back

        pending.put(("metric", score_from_the_back(args, reading, claims, one_thread=torch_forked)))
    except BaseException as error:  # noqa: BLE001
        pending.put(("error", portable(error)))
    writer.join()


def _send_front(out: BinaryIO, header: Any, reading: Reading, claims: Claims, pending: queue.Queue[Any]) -> None:
    """The files' index, each image's detections, front first, until the helper's share begins; then the helper's
    last word."""
    send(out, header)
    for index, image in enumerate(reading.todo):
        if claims.taken_from_back(index):
            break
        send(out, ("detections", index, reading.results.per_image.get(image.id, [])))
    send(out, pending.get())
    out.close()


class ForkedScoring(ForkedSource):
    """The scoring process's side of a shared run (module notes): :meth:`open`, then :meth:`images` (the images it
    takes, with their data), then :meth:`helper_metric` (the helper's share, scored)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.claims = Claims()
        loaded = "torch" in sys.modules  # (tests): torch's thread pool does not survive a fork; one thread there
        super().__init__(lambda out: _share(args, self.claims, out, loaded), args)

    def images(self) -> Iterator[tuple[GtImage, ImageData]]:
        """The images this process takes from the front, decoded here, until the two meet."""
        assert self.results is not None
        while (index := self.claims.front()) is not None:
            message = self.next()
            if message[:2] != ("detections", index):
                raise RuntimeError(f"the helper process sent {message[0]!r} where image {index} was due")
            image = self.todo[index]
            yield image, read_image(self.gt, image, message[2], self.results)

    def helper_metric(self) -> Any:
        """The helper's share, scored (raises its error); ``None`` where it took no image (this process took them
        all before the helper had loaded torch: a small run does not wait for it). Messages of front images it sent
        but this process did not take are passed over."""
        if self.claims.back_count(len(self.todo)) == 0:  # none left and none taken from the back: nothing to wait for
            return None
        while (message := self.next())[0] == "detections":
            pass
        return message[1]
