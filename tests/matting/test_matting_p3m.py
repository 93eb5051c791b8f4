"""The P3M-10k / AM-2k / AIM-500 protocol equals the numpy/scipy/skimage port of ``core/evaluate.py``
(tests/reference/p3m_port.py): per image and per dataset, <= 1e-12 relative, on generated mattes."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from scipy import ndimage

from nobg_metrics.functional.matting import p3m_gradient as p3m_gradient_module
from nobg_metrics.functional.matting.p3m import (
    ERROR_COLUMNS,
    _p3m_error_compute,
    _p3m_errors_update,
    p3m_mad,
    p3m_mse,
    p3m_sad,
)
from nobg_metrics.functional.matting.p3m_connectivity import (
    p3m_connectivity_error,
    p3m_thresholds,
)
from nobg_metrics.functional.matting.p3m_gradient import (
    gaussian_filter_float32,
    p3m_gradient_error,
    reflect_indices,
)
from nobg_metrics.metrics.matting.p3m import (
    P3MMAD,
    P3MMSE,
    P3MSAD,
    P3MConnectivityError,
    P3MGradientError,
)
from nobg_metrics.ops import host_reads
from tests.helpers.ddp import check_ddp
from tests.helpers.tester import check_metric, saved
from tests.matting.test_matting_dim import cases, soft_gt
from tests.reference import dim_matting as dim
from tests.reference import p3m_port as port

RTOL = 1e-12


def ours(name: str, pred, gt, trimap=None) -> float:
    """One of our P3M values by the port's name."""
    measure, _, region = name.partition("_")
    region = {"": "image", "trimap": "trimap", "fg": "fg", "bg": "bg"}[region]
    if measure == "grad":
        return float(_functional("grad")(pred, gt))
    if measure == "conn":
        return float(_functional("conn")(pred, gt))
    return float(_functional(measure)(pred, gt, trimap, region=region))


def _functional(measure: str):
    return {"sad": p3m_sad, "mse": p3m_mse, "mad": p3m_mad, "grad": p3m_gradient_error,
            "conn": p3m_connectivity_error}[measure]


def _close(value: float, expected: float, what: str, rtol: float = RTOL) -> None:
    assert abs(value - expected) <= rtol * max(abs(expected), 1e-300) or value == expected, \
        f"{what}: {value!r} != {expected!r}"


def random_trimap(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """A trimap that disagrees with the gt in its known regions (so the forcing of the -T values matters)."""
    return rng.choice(np.array([0, 128, 255], np.uint8), size=shape, p=[0.4, 0.3, 0.3])


@functools.cache
def samples() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """uint8 (pred, gt, trimap) triples: soft mattes with strands and islands, hard, empty (fully transparent)
    and full (fully opaque) mattes over non-square, 1xN and Nx1 shapes, with band trimaps and random ones."""
    rng = np.random.default_rng(11)
    out = cases(0)
    for pred, gt, _ in cases(1)[:12]:
        out.append((pred, gt, random_trimap(rng, gt.shape)))
    return out


@functools.cache
def port_values(kind: str = "uint8") -> list[dict[str, float]]:
    """The port's values per image, with our named policy where it divides by zero: an image whose trimap
    has no unknown pixel scores MSE-T = MAD-T = 0 (the reference: inf or NaN; tested on its own below)."""
    values = [port.all_metrics(*_as_port(pred, gt, trimap, kind)) for pred, gt, trimap in _inputs(kind)]
    for (_, _, trimap), image in zip(_inputs(kind), values):
        if not (trimap == 128).any():
            image["mse_trimap"] = image["mad_trimap"] = 0.0
    return values


def _inputs(kind: str):
    if kind == "uint8":
        return samples()
    rng = np.random.default_rng(5)
    dtype = np.float64 if kind == "float64" else np.float32
    out = []
    for pred, gt, trimap in samples()[::2]:  # in-memory float predictions, off the 1/255 grid
        soft = np.clip(pred / 255 + rng.uniform(-0.5, 0.5, pred.shape) / 255, 0, 1).astype(dtype)
        out.append((soft, gt, trimap))
    return out


def _as_port(pred, gt, trimap, kind):
    return (port.read_alpha(pred) if kind == "uint8" else pred), port.read_alpha(gt), trimap


def all_ours(pred, gt, trimap) -> dict[str, float]:
    """Every value of ours in one pass each: the 8 pixel errors (one update), grad, conn."""
    totals, count = _p3m_errors_update(pred, gt, trimap, True)
    values = {name: float(_p3m_error_compute(name, totals["errors"], count, totals["with_trimap"]))
              for name in ERROR_COLUMNS}
    return values | {"grad": float(p3m_gradient_error(pred, gt)), "conn": float(p3m_connectivity_error(pred, gt))}


@pytest.mark.parametrize("kind", ["uint8", "float64", "float32"])
def test_every_metric_equals_the_port_per_image(kind):
    for (pred, gt, trimap), expected in zip(_inputs(kind), port_values(kind)):
        values = all_ours(*(torch.from_numpy(a) for a in (pred, gt, trimap)))
        for name, value in values.items():
            _close(value, expected[name], f"{name} {kind} {pred.shape}")


@pytest.mark.parametrize("kind", ["uint8", "float64"])
def test_dataset_values_equal_the_port(kind):
    """Lists of mixed sizes (grouped by size internally): the mean of the per-image values; and the public
    functions by the reference's names."""
    triples = _inputs(kind)
    preds, gts, trimaps = ([torch.from_numpy(a) for a in column] for column in zip(*triples))
    values = all_ours(preds, gts, trimaps)
    for name in [*list(ERROR_COLUMNS), "grad", "conn"]:
        expected = float(np.mean([image[name] for image in port_values(kind)]))
        _close(values[name], expected, f"{name} dataset {kind}")
        if name in ERROR_COLUMNS:
            _close(ours(name, preds, gts, trimaps), expected, f"{name} public function")


def test_float_gt_equals_its_uint8_png():
    """A float64 gt ``png / 255.`` scores what the PNG bytes score (the uint8 paths are tables of the same
    float64 operations); a float32 prediction takes numpy's float32 connectivity arithmetic."""
    triples = samples()[::3]
    preds, gts, trimaps = ([torch.from_numpy(a) for a in column] for column in zip(*triples))
    as_float = [g.double() / 255 for g in gts]
    assert all_ours(preds, gts, trimaps) == all_ours(preds, as_float, trimaps)
    float32 = [p.float() / 255 for p in preds]
    expected = np.mean([port.connectivity(p.numpy(), port.read_alpha(g.numpy())) for p, g in zip(float32, gts)])
    _close(float(p3m_connectivity_error(float32, as_float)), float(expected), "float32 pred, float64 gt")


def test_equal_size_batches_equal_the_port():
    chosen = [i for i, t in enumerate(samples()) if t[0].shape == samples()[0][0].shape]
    pred, gt, trimap = (torch.from_numpy(np.stack(column))[:, None] for column in zip(*[samples()[i] for i in chosen]))
    values = all_ours(pred, gt, trimap)
    for name, value in values.items():
        _close(value, float(np.mean([port_values()[i][name] for i in chosen])), name)


@pytest.mark.parametrize("shape", [(37, 53), (1, 17), (17, 1), (2, 3), (1, 1), (13, 7), (6, 6)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gaussian_filter_is_scipys_bit_for_bit(shape, dtype):
    """Kernel taps, reflect borders (lines shorter than the radius), the pass order and the float32 output."""
    image = np.random.default_rng(sum(shape)).random((2, *shape)).astype(dtype)
    image[image < 0.3] = 0
    for orders in ((1, 0), (0, 1), (0, 0), (1, 1)):
        result = gaussian_filter_float32(torch.from_numpy(image), orders).numpy()
        for index in range(2):
            expected = ndimage.gaussian_filter(image[index], 1.4, order=list(orders), output=np.float32)
            assert np.array_equal(result[index], expected), (shape, orders)


def test_reflect_indices_are_numpy_symmetric_padding():
    for size in (1, 2, 3, 5, 13):
        expected = np.pad(np.arange(size), 6, mode="symmetric")
        assert reflect_indices(size, -6, size + 6, torch.device("cpu")).tolist() == expected.tolist()


@pytest.mark.parametrize("shape", [(41, 67), (1, 30), (30, 1), (13, 13), (5, 12)])
def test_gradient_filters_only_where_the_map_varies(shape, monkeypatch):
    """On CPU each strip is filtered on its varying columns only; a GPU filters everything. Bit-identical:
    single changed pixels at corners and borders, a disc cut by the border, a constant map, an empty one."""
    rng = np.random.default_rng(sum(shape))
    h, w = shape
    gt = np.zeros((4, h, w), np.uint8)
    gt[0, -1, -1] = 255
    gt[1, 0, w // 2] = 200
    yy, xx = np.mgrid[0:h, 0:w]
    gt[2] = np.where((yy - h) ** 2 + (xx - w / 3) ** 2 <= (h * h + w * w) / 9, 255, 0)
    pred = np.where(rng.random(gt.shape) < 0.05, rng.integers(0, 256, gt.shape), gt).astype(np.uint8)
    pred[3] = 77
    p, g = torch.from_numpy(pred), torch.from_numpy(gt)
    boxed = [float(p3m_gradient_error(p[i], g[i])) for i in range(4)]
    assert boxed == [float(p3m_gradient_error(p[i], g[i], engine="fixed")) for i in range(4)]  # whole strips
    with monkeypatch.context() as patch:  # the device's form too: whole image, multiply then add (no addcmul)
        patch.setattr(host_reads, "free_on", lambda tensor: False)
        whole = [float(p3m_gradient_error(p[i], g[i])) for i in range(4)]
    assert boxed == whole
    assert boxed == [port.gradient(port.read_alpha(a), port.read_alpha(b)) for a, b in zip(pred, gt)]


@pytest.mark.parametrize("shape", [(1, 3000), (2, 2000), (3000, 1), (70, 200)])
def test_thin_images_are_filtered_in_tiles_bit_for_bit(shape, monkeypatch):
    """Wide thin images are cut across their columns too (each tile reflect-padded from the map): scipy's bits
    (strips of 2^10 padded pixels here, so that these small images take the tiles a 1 x 10^6 one takes)."""
    monkeypatch.setattr(p3m_gradient_module, "CPU_STRIP_ELEMENTS", 1 << 10)
    assert len(p3m_gradient_module._windows(1, *shape, torch.device("cpu"))) > 3
    rng = np.random.default_rng(sum(shape))
    gt = np.where((np.arange(shape[0] * shape[1]).reshape(shape) // 301) % 2 == 0, 255, 0).astype(np.uint8)
    pred = np.where(rng.random(shape) < 0.1, rng.integers(0, 256, shape), gt).astype(np.uint8)
    expected = port.gradient(port.read_alpha(pred), port.read_alpha(gt))
    assert float(p3m_gradient_error(torch.from_numpy(pred), torch.from_numpy(gt))) == expected
    image = rng.random((1, *shape))
    result = gaussian_filter_float32(torch.from_numpy(image), (1, 0)).numpy()[0]
    assert np.array_equal(result, ndimage.gaussian_filter(image[0], 1.4, order=[1, 0], output=np.float32))


@pytest.mark.parametrize("step", [0.1, 0.05, 0.2, 0.25, 0.3])
def test_thresholds_are_numpy_arange(step):
    assert p3m_thresholds(step) == [float(v) for v in np.arange(0, 1.1, step)]
    triples = samples()[:9]
    preds, gts = ([torch.from_numpy(a) for a in column] for column in list(zip(*triples))[:2])
    expected = np.mean([port.connectivity(port.read_alpha(p), port.read_alpha(g), step) for p, g, _ in triples])
    _close(float(p3m_connectivity_error(preds, gts, step=step)), float(expected), f"conn step {step}")


def test_connectivity_ties_go_to_the_first_component_in_raster_order():
    """Two equal joint components: skimage's label order (raster) picks the top-right one, MATLAB's
    column-major order the bottom-left one; the P3M and DIM values differ accordingly."""
    gt = np.zeros((6, 8), np.uint8)
    gt[0, 5:8] = 200
    gt[3:6, 1] = 200
    pred = gt.copy()
    pred[0, 5:8] = 255
    p, g = torch.from_numpy(pred), torch.from_numpy(gt)
    expected = port.connectivity(port.read_alpha(pred), port.read_alpha(gt))
    _close(float(p3m_connectivity_error(p, g)), expected, "tie")
    assert expected != pytest.approx(dim.connectivity(pred, gt), rel=1e-3)


def test_connectivity_skips_empty_levels():
    """A gt that never reaches 0.6 and a prediction above it: DIM assigns t_{m-1} at the first empty level
    (``phi(pred)`` counts the distance to it), P3M leaves those pixels for ``l = 1`` (no distance)."""
    rng = np.random.default_rng(3)
    gt = (soft_gt(rng, 30, 41, "soft") * 0.55).astype(np.uint8)
    pred = np.clip(gt * 1.7 + rng.integers(-20, 20, gt.shape), 0, 255).astype(np.uint8)
    expected = port.connectivity(port.read_alpha(pred), port.read_alpha(gt))
    _close(float(p3m_connectivity_error(torch.from_numpy(pred), torch.from_numpy(gt))), expected, "skip")
    assert expected != pytest.approx(dim.connectivity(pred, gt), rel=1e-3)


def test_engines_give_the_port_values_and_allow_host_sync_is_a_deprecated_alias():
    """Both forms of the connectivity labelling and of the gradient filters (fixed: the default off CPU) agree."""
    chosen = [i for i, (pred, _, _) in enumerate(samples()) if pred.size <= 2500][:6]
    preds, gts = ([torch.from_numpy(samples()[i][k]) for i in chosen] for k in (0, 1))
    expected = float(np.mean([port_values()[i]["conn"] for i in chosen]))
    by_data = p3m_connectivity_error(preds, gts, engine="data_sized")
    _close(float(by_data), expected, "conn, data-sized labelling")
    assert torch.equal(p3m_connectivity_error(preds, gts, engine="fixed"), by_data)
    metric = P3MConnectivityError(engine="fixed")
    metric.update(preds, gts)
    assert torch.equal(metric.compute(), by_data)
    with pytest.warns(DeprecationWarning, match="engine='data_sized'"):
        assert torch.equal(p3m_connectivity_error(preds, gts, allow_host_sync=True), by_data)
    with pytest.warns(DeprecationWarning, match="allow_host_sync"):
        assert P3MConnectivityError(allow_host_sync=False).engine == "auto"
    with pytest.raises(ValueError, match="engine"):
        p3m_connectivity_error(preds, gts, engine="sync_free")
    with pytest.raises(ValueError, match="engine"):
        P3MConnectivityError(engine=True)
    gradient = P3MGradientError(engine="fixed")
    gradient.update(preds, gts)
    assert torch.equal(gradient.compute(), p3m_gradient_error(preds, gts, engine="data_sized"))
    with pytest.raises(ValueError, match="engine"):
        P3MGradientError(engine="gpu")


def test_no_unknown_pixel_scores_zero_mse_t_and_mad_t():
    """The named policy: the reference divides by 0 (inf or NaN); we score 0. SAD-T is still the forced sum."""
    pred, gt, _ = samples()[0]
    trimap = np.where(gt > 127, 255, 0).astype(np.uint8)
    p, g, t = (torch.from_numpy(a) for a in (pred, gt, trimap))
    assert float(p3m_mse(p, g, t, region="trimap")) == 0.0 == float(p3m_mad(p, g, t, region="trimap"))
    sad_t, mse_t, _ = port.trimap_errors(port.read_alpha(pred), port.read_alpha(gt), trimap)
    _close(float(p3m_sad(p, g, t, region="trimap")), sad_t, "sad_t")
    assert not np.isfinite(mse_t) or mse_t == 0.0


def test_bad_inputs_name_the_argument():
    pred, gt = torch.rand(2, 5, 6), torch.rand(2, 5, 6)
    with pytest.raises(ValueError, match="trimap"):
        p3m_sad(pred, gt, region="trimap")
    with pytest.raises(ValueError, match="region"):
        p3m_mse(pred, gt, torch.full((2, 5, 6), 0.5), region="fg")
    with pytest.raises(ValueError, match="region"):
        p3m_sad(pred, gt, region="unknown")
    with pytest.raises(ValueError, match=r"`pred`\[1\]"):
        p3m_sad([pred[0], pred[1, :4]], [gt[0], gt[1]])
    with pytest.raises(ValueError, match="trimap"):
        p3m_sad(pred, gt, torch.full((2, 5, 6), 0.3), region="trimap")
    with pytest.raises(TypeError, match="gt"):
        p3m_connectivity_error(pred, gt.to(torch.int16))
    with pytest.raises(ValueError, match="pred"):
        _functional("grad")(pred * 2, gt)
    with pytest.raises(ValueError, match="step"):
        P3MConnectivityError(step=0.0)
    with pytest.raises(ValueError, match="region"):
        P3MMAD(region="bg")
    with pytest.raises(ValueError, match="trimap"):
        P3MSAD(region="fg").update(pred, gt)


CLASSES = {
    "sad": functools.partial(P3MSAD), "sad_trimap": functools.partial(P3MSAD, region="trimap"),
    "sad_fg": functools.partial(P3MSAD, region="fg"), "sad_bg": functools.partial(P3MSAD, region="bg"),
    "mse": functools.partial(P3MMSE), "mse_trimap": functools.partial(P3MMSE, region="trimap"),
    "mad": functools.partial(P3MMAD), "mad_trimap": functools.partial(P3MMAD, region="trimap"),
    "grad": functools.partial(P3MGradientError), "conn": functools.partial(P3MConnectivityError),
}


@pytest.mark.parametrize("name", list(CLASSES))
def test_classes_update_and_compute(name):
    chosen = [i for i, (pred, _, _) in enumerate(samples()) if pred.size <= 2500][:8]
    tensors = [tuple(torch.from_numpy(a) for a in samples()[i]) for i in chosen]
    expected = float(np.mean([port_values()[i][name] for i in chosen]))
    measure, _, region = name.partition("_")

    def functional(pred, gt, trimap):
        if measure in ("grad", "conn"):
            return _functional(measure)(pred, gt, trimap)
        return _functional(measure)(pred, gt, trimap, region=region or "image")

    check_metric(CLASSES[name], tensors, expected, functional=functional, atol=RTOL * max(1.0, abs(expected)),
                 invariance_atol=1e-12 * max(1.0, abs(expected)))


def test_pixel_metrics_share_one_statistic():
    """Every P3MSAD / P3MMSE / P3MMAD has the same states whatever its region: one compute group."""
    states = {name: sorted(CLASSES[name]().metric_state) for name in CLASSES if name[:3] in ("sad", "mse", "mad")}
    assert len({tuple(value) for value in states.values()}) == 1, states


def test_trimap_metrics_average_over_images_with_a_trimap():
    """In one compute group a whole-image metric may see images without a trimap: the trimap columns
    average over the images that came with one."""
    (p0, g0, t0), (p1, g1, _) = samples()[0], samples()[1]
    whole = P3MSAD()
    whole.update(torch.from_numpy(p0), torch.from_numpy(g0), torch.from_numpy(t0))
    whole.update(torch.from_numpy(p1), torch.from_numpy(g1))
    forced = P3MSAD(region="trimap")
    forced.load_state_dict(saved(whole))  # what a compute group shares
    _close(float(forced.compute()), port_values()[0]["sad_trimap"], "one image with a trimap")
    _close(float(whole.compute()), (port_values()[0]["sad"] + port_values()[1]["sad"]) / 2, "whole")


@pytest.mark.slow
def test_ddp_two_ranks():
    tensors = [tuple(torch.from_numpy(a) for a in triple) for triple in samples()[:6]]
    check_ddp(functools.partial(P3MSAD, region="trimap"), tensors, atol=1e-9)
    check_ddp(P3MConnectivityError, tensors, atol=1e-9)
