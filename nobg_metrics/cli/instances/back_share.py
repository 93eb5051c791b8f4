"""The helper's side of a shared ``instances`` run (:mod:`~nobg_metrics.cli.instances.shared_scoring`): the images it
takes from the back, scored with the metric of the run's flags, as the scoring process scores its own."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

import torch

from nobg_metrics.allocator import tune_cpu_allocator
from nobg_metrics.cli.instances.claims import Claims
from nobg_metrics.cli.instances.reading import ImageData, Reading, read_image
from nobg_metrics.cli.instances.run import batches, build_metric
from nobg_metrics.io.coco.annotations import GtImage


class BackImages:
    """The images a shared run's helper takes from the back (:mod:`~nobg_metrics.cli.instances.shared_scoring`),
    decoded one at a time: what :func:`batches` reads."""

    def __init__(self, reading: Reading, claims: Claims) -> None:
        self.gt, self.results, self.todo, self.claims = reading.gt, reading.results, reading.todo, claims

    def images(self) -> Iterator[tuple[GtImage, ImageData]]:
        """Each image taken from the back, and its data."""
        while (index := self.claims.back()) is not None:
            image = self.todo[index]
            yield image, read_image(self.gt, image, self.results.per_image.get(image.id, []), self.results)


def score_from_the_back(args: argparse.Namespace, reading: Reading, claims: Claims, one_thread: bool = False
                        ) -> Any:
    """A shared run's helper: the metric of the flags, updated with the images it takes from the back (on CPU;
    ``one_thread``: forked from a process that had loaded torch)."""
    if one_thread:
        torch.set_num_threads(1)
    device = torch.device("cpu")
    tune_cpu_allocator()
    metric = build_metric(args, reading.gt, device)
    for _, preds, targets in batches(BackImages(reading, claims), args, device):
        metric.update(preds, targets)
    return metric
