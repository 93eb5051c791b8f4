"""CCm's sync-free path (``engine="fixed"``, or ``host_reads.free_on`` forced to False as on CUDA where host syncs are
counted) gives the CPU path's numbers: the camouflage degree map to 1e-12 (measured: bit for bit) on the scenes of
test_ccm.py batched per shape (empty, full-frame, tiny and thin objects beside ordinary ones: a stress set of its own;
CCm's value on the catalog's stress batch is tests/test_sync_free.py's); an overflowing near set is NaN and raises,
never a wrong number; and ``engine="data_sized"`` off CPU reads only in the documented places of the data-sized path.
The search itself, both forms against sklearn: tests/ops/test_ccm_search.py."""

from __future__ import annotations

import functools
import importlib
import inspect

import numpy as np
import pytest
import torch

from nobg_metrics.functional.sod.context_measure import camouflage_context_measure
from nobg_metrics.metrics.sod.context_measure import CamouflageContextMeasure
from nobg_metrics.ops import ccm_search, host_reads
from tests.helpers.syncs import HostSyncRecorder
from tests.sod.test_ccm import SHAPES, scene, scenes

degree_module = importlib.import_module("nobg_metrics.functional.sod.camouflage_degree")


@pytest.fixture
def device_paths(monkeypatch):
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)


@functools.cache
def batches() -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """One ``(pred, gt, image)`` batch per shape of test_ccm.py: its seven kinds of object."""
    out = []
    for shape in SHAPES:
        group = [s for s in scenes() if s[0].shape == shape]
        out.append((torch.from_numpy(np.stack([s[0] for s in group])),
                    torch.from_numpy(np.stack([s[1] for s in group])),
                    torch.from_numpy(np.stack([s[2] for s in group])).permute(0, 3, 1, 2).contiguous()))
    return out


@functools.cache
def _degrees():
    return [(degree_module.camouflage_degree(image, gt > 128), gt > 128, image) for _, gt, image in batches()]


def test_the_degree_map_equals_the_cpu_path():
    worst = 0.0
    for host, gt, image in _degrees():
        device = degree_module.camouflage_degree(image, gt, engine="fixed")
        assert not device.isnan().any()
        worst = max(worst, (device - host).abs().max().item())
    assert worst <= 1e-12


def test_small_images_have_no_patches_on_the_device_path():
    for height, width in [(5, 30), (6, 6), (7, 7), (1, 1)]:
        _, gt, image = scene(height, width, "tiny", 9)
        image = torch.from_numpy(image).permute(2, 0, 1)[None].contiguous()
        assert not degree_module.camouflage_degree(image, torch.from_numpy(gt > 128)[None], engine="fixed").any()


def test_an_overflowing_near_set_is_nan_and_raises(monkeypatch):
    """A flat image: the coordinates decide, mirror-image patches tie; with a near set of 2 the tie overflows."""
    monkeypatch.setattr(ccm_search, "NEAR_CANDIDATES", 2)
    gt = torch.zeros(2, 40, 40, dtype=torch.bool)
    gt[:, 12:28, 12:28] = True
    image = torch.full((2, 3, 40, 40), 90, dtype=torch.uint8)
    image[1] = torch.randint(0, 256, (3, 40, 40), generator=torch.Generator().manual_seed(0))
    cd = degree_module.camouflage_degree(image, gt, engine="fixed")
    assert cd[0].isnan().all() and not cd[1].isnan().any()  # only the image that overflowed
    with pytest.raises(RuntimeError, match='engine="data_sized"'):
        camouflage_context_measure(gt.float(), gt, image, engine="fixed")
    metric = CamouflageContextMeasure(validate_args=False, engine="fixed")
    metric.update(gt.float(), gt, image)  # no read here
    with pytest.raises(RuntimeError, match='engine="data_sized"'):
        metric.compute()
    exact = camouflage_context_measure(gt.float(), gt, image, engine="data_sized")
    assert not exact.isnan()


def test_the_deprecated_allow_host_sync_is_a_bool():
    gt = torch.zeros(1, 10, 10, dtype=torch.bool)
    image = torch.zeros(1, 3, 10, 10, dtype=torch.uint8)
    with pytest.raises(TypeError, match="allow_host_sync"):
        camouflage_context_measure(gt.float(), gt, image, allow_host_sync=1)
    with pytest.raises(TypeError, match="allow_host_sync"):
        CamouflageContextMeasure(allow_host_sync="yes")


def _documented_reads() -> list[tuple[str, range]]:
    """Where ``engine="data_sized"`` may read: the data-sized similarity, reconstruction and search."""
    places = []
    for function in (degree_module._similarity_data, degree_module._reconstruct, ccm_search.nearest_background,
                     ccm_search._search_listed):
        lines, first = inspect.getsourcelines(function)
        places.append((function.__module__.removeprefix("nobg_metrics.").replace(".", "/") + ".py",
                       range(first, first + len(lines))))
    return places


def test_the_data_sized_engine_reads_only_in_the_data_sized_path(device_paths):
    """The sync-free update (the default off CPU) is tests/test_sync_free.py's; with ``engine="data_sized"`` off CPU
    the reads are the data-sized search's ``nonzero`` lists, nowhere else."""
    pred, gt, image = (part[:4] for part in batches()[3])  # 33 x 33: blobs, ellipse, border, thin
    metric = CamouflageContextMeasure(normalize=True, validate_args=False, engine="data_sized")
    metric.update(pred, gt, image)  # warm-up
    with HostSyncRecorder() as recorder:
        metric.update(pred, gt, image)
    places = _documented_reads()
    assert recorder.hits and {op for op, _ in recorder.hits} == {"nonzero"}
    for _, where in recorder.hits:
        file, line = where.split(" <- ")[0].split(":")
        assert any(file == name and int(line) in lines for name, lines in places), where
