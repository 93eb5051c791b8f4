"""SAD, MSE, gradient and connectivity error equal the numpy/scipy port of the DIM MATLAB evaluation."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from scipy import ndimage

import nobg_metrics as nm
from nobg_metrics import functional as F
from nobg_metrics.ops.filters import gaussian_gradient, sobel_magnitude
from tests.helpers.data import SHAPES
from tests.helpers.ddp import check_ddp
from tests.helpers.tester import check_metric
from tests.reference import dim_matting as dim

OURS = {"sad": F.sad, "mse": F.mse_metric, "grad": F.gradient_error, "conn": F.connectivity_error}
PORT = {"sad": dim.sad, "mse": dim.mse, "grad": dim.gradient, "conn": dim.connectivity}
RTOL = 1e-6


def soft_gt(rng: np.random.Generator, h: int, w: int, kind: str) -> np.ndarray:
    """A uint8 matte: ``soft`` (blurred disc + hair strands + islands), ``hard`` (binary), ``empty``, ``full``."""
    if kind == "empty":
        return np.zeros((h, w), np.uint8)
    if kind == "full":
        return np.full((h, w), 255, np.uint8)
    yy, xx = np.mgrid[0:h, 0:w]
    cy, cx = rng.uniform(0.2, 0.8) * h, rng.uniform(0.2, 0.8) * w
    radius = rng.uniform(0.2, 0.45) * min(h, w) + 1
    dist = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
    if kind == "hard":
        return np.where(dist <= radius, 255, 0).astype(np.uint8)
    alpha = 1 / (1 + np.exp((dist - radius) / rng.uniform(0.5, 3.0)))
    for _ in range(rng.integers(1, 5)):  # thin semi-transparent strands, some broken
        column = rng.integers(0, w)
        alpha[:, column] = np.maximum(alpha[:, column], rng.uniform(0.2, 0.9) * (rng.random(h) < 0.85))
    islands = rng.random((h, w)) < 0.01
    alpha[islands] = rng.uniform(0.3, 1.0, int(islands.sum()))
    return np.clip(np.round(alpha * 255), 0, 255).astype(np.uint8)


def noisy_pred(rng: np.random.Generator, gt: np.ndarray) -> np.ndarray:
    """A shifted, noisy uint8 estimate of ``gt`` (with its own islands)."""
    pred = ndimage.shift(gt.astype(np.float64), rng.uniform(-2, 2, 2), order=1, mode="nearest")
    pred += rng.normal(0, 20, gt.shape)
    return np.clip(np.round(pred), 0, 255).astype(np.uint8)


def trimap_of(gt: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Unknown (128) on a dilated band of the soft pixels, else 0 / 255 by the matte."""
    band = ndimage.binary_dilation((gt > 0) & (gt < 255), iterations=int(rng.integers(1, 4)))
    trimap = np.where(gt > 127, 255, 0).astype(np.uint8)
    trimap[band] = 128
    return trimap


def cases(seed: int = 0, shapes=SHAPES) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """uint8 (pred, gt, trimap) triples over every shape and matte kind."""
    rng = np.random.default_rng(seed)
    kinds = ["soft", "soft", "hard", "empty", "full"]
    out = []
    for index, (h, w) in enumerate(shapes):
        for kind in (kinds[index % 5], kinds[(index + 2) % 5], "soft"):
            gt = soft_gt(rng, h, w, kind)
            out.append((noisy_pred(rng, gt), gt, trimap_of(gt, rng)))
    return out


@pytest.mark.parametrize("shape", [(37, 53), (1, 17), (17, 1), (2, 3), (12, 9)])
def test_filters_equal_scipy(shape):
    """The separable Gaussian-derivative pair equals imfilter(.., 'replicate', 'conv') with the 9x9 kernel."""
    image = np.random.default_rng(sum(shape)).random((2, *shape))
    gx, gy = gaussian_gradient(torch.from_numpy(image))
    magnitude = sobel_magnitude(torch.from_numpy(image))
    hx = dim.gaussgradient_kernel(1.4)
    for index in range(2):
        np.testing.assert_allclose(gx[index].numpy(), ndimage.convolve(image[index], hx, mode="nearest"), atol=1e-14)
        np.testing.assert_allclose(gy[index].numpy(), ndimage.convolve(image[index], hx.T, mode="nearest"), atol=1e-14)
        sobel_x = ndimage.sobel(image[index], 1, mode="constant")
        sobel_y = ndimage.sobel(image[index], 0, mode="constant")
        np.testing.assert_allclose(magnitude[index].numpy(), np.hypot(sobel_x, sobel_y), atol=1e-14)


def _assert_close(ours: float, expected: float, what: str) -> None:
    assert abs(ours - expected) <= RTOL * max(abs(expected), 1.0), f"{what}: {ours} != {expected}"


def _port_mean(name: str, triples, with_trimap: bool, **options) -> float:
    return float(np.mean([PORT[name](p, g, t if with_trimap else None, **options) for p, g, t in triples]))


@pytest.mark.parametrize("with_trimap", [False, True])
@pytest.mark.parametrize("name", list(OURS))
def test_uint8_mattes_equal_the_dim_port(name, with_trimap):
    triples = cases(0)
    preds, gts, trimaps = ([torch.from_numpy(a) for a in column] for column in zip(*triples))
    ours = OURS[name](preds, gts, trimaps if with_trimap else None).item()
    _assert_close(ours, _port_mean(name, triples, with_trimap), name)


@pytest.mark.parametrize("clamp", [False, True])
@pytest.mark.parametrize("name", ["sad", "mse"])
def test_the_pair_histogram_path_equals_the_dim_port(name, clamp, monkeypatch):
    """Large uint8 mattes on CPU go through a (pred, gt) level-pair histogram; forced here on small ones:
    per image, lists of mixed sizes, equal-size batches, trimaps, clamping."""
    from nobg_metrics.functional.matting import sad_mse as matting

    monkeypatch.setattr(matting, "_PAIR_HISTOGRAM_MIN_PIXELS", 0)
    triples = cases(3)
    expected = [(dim.clamp_to_trimap(p, t) if clamp else p, g, t) for p, g, t in triples]
    preds, gts, trimaps = ([torch.from_numpy(a) for a in column] for column in zip(*triples))
    ours = OURS[name](preds, gts, trimaps, clamp_to_trimap=clamp).item()
    assert abs(ours - _port_mean(name, expected, True)) <= 1e-12 * max(1.0, abs(ours))
    same = [t for t in triples if t[0].shape == triples[0][0].shape]
    batch = [torch.from_numpy(np.stack(column)) for column in zip(*same)]
    ours = OURS[name](*batch, clamp_to_trimap=clamp).item()
    expected = [(dim.clamp_to_trimap(p, t) if clamp else p, g, t) for p, g, t in same]
    assert abs(ours - _port_mean(name, expected, True)) <= 1e-12 * max(1.0, abs(ours))
    assert abs(OURS[name](*batch[:2]).item() - _port_mean(name, same, False)) <= 1e-12 * max(1.0, abs(ours))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(OURS))
def test_float_mattes_equal_the_dim_port(name, dtype):
    rng = np.random.default_rng(1)
    triples = []
    for p, g, t in cases(1, SHAPES[:5]):
        jitter = rng.uniform(-0.5, 0.5, p.shape) / 255  # not on the 1/255 grid
        triples.append((np.clip(p / 255 + jitter, 0, 1).astype(dtype), (g / 255).astype(dtype), t))
    preds, gts, trimaps = ([torch.from_numpy(a) for a in column] for column in zip(*triples))
    _assert_close(OURS[name](preds, gts, trimaps).item(), _port_mean(name, triples, True), name)


@pytest.mark.parametrize("name", list(OURS))
def test_clamp_to_trimap_equals_clamping_first(name):
    triples = cases(2, SHAPES[:4])
    clamped = [(dim.clamp_to_trimap(p, t), g, t) for p, g, t in triples]
    preds, gts, trimaps = ([torch.from_numpy(a) for a in column] for column in zip(*triples))
    ours = OURS[name](preds, gts, trimaps, clamp_to_trimap=True).item()
    _assert_close(ours, _port_mean(name, clamped, True), name)


def test_sobel_variant_equals_its_port():
    triples = cases(3, SHAPES[:6])
    preds, gts, trimaps = ([torch.from_numpy(a) for a in column] for column in zip(*triples))
    for with_trimap in (False, True):
        ours = F.gradient_error(preds, gts, trimaps if with_trimap else None, kernel="sobel").item()
        expected = float(np.mean([dim.sobel_gradient(p, g, t if with_trimap else None) for p, g, t in triples]))
        _assert_close(ours, expected, f"sobel trimap={with_trimap}")


def test_connectivity_other_step_and_tie_order():
    triples = cases(4, SHAPES[:4])
    preds, gts, _ = ([torch.from_numpy(a) for a in column] for column in zip(*triples))
    _assert_close(F.connectivity_error(preds, gts, step=0.25).item(),
                  _port_mean("conn", triples, False, step=0.25), "step 0.25")
    # two equal joint components: MATLAB keeps the one first in column-major order (bottom-left)
    gt = np.zeros((6, 8), np.uint8)
    gt[0, 5:8] = 200
    gt[3:6, 1] = 200
    pred = gt.copy()
    pred[0, 5:8] = 255
    ours = F.connectivity_error(torch.from_numpy(pred), torch.from_numpy(gt)).item()
    _assert_close(ours, dim.connectivity(pred, gt), "tie")
    assert ours > 0


def test_edge_cases_are_defined():
    zeros = torch.zeros(5, 7)
    tri_known = torch.full((5, 7), 255, dtype=torch.uint8)
    for name, function in OURS.items():
        assert function(zeros, zeros).item() == 0.0, name
        assert function(torch.rand(5, 7), torch.rand(5, 7), tri_known).item() == 0.0, name  # empty region
    constant = torch.full((1, 9), 0.7)
    # constant maps: no gradient (to rounding)
    assert F.gradient_error(constant, torch.full((1, 9), 0.2)).item() < 1e-20


def test_rejects_bad_options():
    with pytest.raises(ValueError, match="kernel"):
        F.gradient_error(torch.rand(4, 4), torch.rand(4, 4), kernel="scharr")
    with pytest.raises(ValueError, match="step"):
        F.connectivity_error(torch.rand(4, 4), torch.rand(4, 4), step=0.0)
    with pytest.raises(ValueError, match="step"):
        nm.ConnectivityError(step=1.5)
    with pytest.raises(TypeError, match="allow_host_sync"):
        F.connectivity_error(torch.rand(4, 4), torch.rand(4, 4), allow_host_sync=1)
    with pytest.raises(TypeError, match="allow_host_sync"):
        nm.ConnectivityError(allow_host_sync="yes")


@pytest.mark.parametrize("engine", ["fixed", "data_sized"])
def test_connectivity_equals_the_dim_port_with_either_labelling(engine):
    """The fixed-size labelling (no sync: the default off CPU) and the data-sized one, both run here on CPU."""
    triples = cases(5, SHAPES)
    preds, gts, trimaps = ([torch.from_numpy(a) for a in column] for column in zip(*triples))
    metric = nm.ConnectivityError(engine=engine)
    metric.update(preds, gts, trimaps)
    _assert_close(metric.compute().item(), _port_mean("conn", triples, True), f"engine={engine}")


def test_connectivity_engines_agree_and_allow_host_sync_is_a_deprecated_alias():
    samples = _samples(3, [(37, 53), (1, 17), (33, 70)])
    preds, gts, trimaps = (list(column) for column in zip(*samples))
    by_data = F.connectivity_error(preds, gts, trimaps, engine="data_sized")
    assert torch.equal(F.connectivity_error(preds, gts, trimaps, engine="fixed"), by_data)
    with pytest.warns(DeprecationWarning, match="engine='data_sized'"):
        assert torch.equal(F.connectivity_error(preds, gts, trimaps, allow_host_sync=True), by_data)
    with pytest.warns(DeprecationWarning, match="allow_host_sync"):
        metric = nm.ConnectivityError(allow_host_sync=True)
    assert metric.engine == "data_sized"
    metric.update(preds, gts, trimaps)
    assert torch.equal(metric.compute(), by_data)
    with pytest.raises(ValueError, match="engine"):
        F.connectivity_error(preds, gts, engine="sync_free")
    with pytest.raises(ValueError, match="engine"):
        nm.ConnectivityError(engine="gpu")
    with pytest.raises(ValueError, match="engine"), pytest.warns(DeprecationWarning):
        nm.ConnectivityError(allow_host_sync=True, engine="fixed")  # the two switches contradict each other


def _samples(seed: int, shapes) -> list[tuple[torch.Tensor, ...]]:
    return [tuple(torch.from_numpy(a) for a in triple) for triple in cases(seed, shapes)]


@pytest.mark.parametrize("make_metric, functional, name", [
    (nm.GradientError, F.gradient_error, "grad"),
    (nm.ConnectivityError, F.connectivity_error, "conn"),
    (functools.partial(nm.GradientError, kernel="sobel"), functools.partial(F.gradient_error, kernel="sobel"),
     None),
])
def test_shared_tester(make_metric, functional, name):
    shapes = [(37, 53), (37, 53), (1, 17), (33, 70), (33, 70), (33, 70)]
    samples = _samples(5, shapes)
    expected = None
    if name is not None:
        expected = float(np.mean([PORT[name](*(a.numpy() for a in sample)) for sample in samples]))
    value = check_metric(make_metric, samples, functional=functional, atol=1e-9, invariance_atol=1e-9)
    if expected is not None:
        _assert_close(value.item(), expected, name)


@pytest.mark.slow
def test_ddp_connectivity():
    check_ddp(functools.partial(nm.ConnectivityError, clamp_to_trimap=True), _samples(6, [(21, 30)] * 3 + [(9, 5)] * 2))


@pytest.mark.parametrize("where", ["middle", "corner", "edge_row"])
def test_gradient_on_the_unknown_box_equals_the_whole_image(where):
    """On CPU the gradient filters run on the unknown region's box (+4 px); ``engine="fixed"`` (a GPU's default)
    filters the whole image. Same values for a box in the middle, in a corner (replicate padding at the border) and
    on a border row."""
    rng = np.random.default_rng(7)
    gt = np.clip(rng.normal(0.5, 0.4, (2, 41, 67)) * 255, 0, 255).astype(np.uint8)
    pred = np.clip(gt + rng.normal(0, 40, gt.shape), 0, 255).astype(np.uint8)
    trimap = np.where(gt > 128, 255, 0).astype(np.uint8)
    box = {"middle": (slice(12, 25), slice(20, 41)), "corner": (slice(0, 6), slice(60, 67)),
           "edge_row": (slice(40, 41), slice(3, 50))}[where]
    trimap[(slice(None), *box)] = 128
    trimap[1, 20, 30] = 128  # the second image's region differs: the box is the union over the batch
    inputs = [torch.from_numpy(a) for a in (pred, gt, trimap)]
    cropped = F.gradient_error(*inputs).item()
    assert abs(F.gradient_error(*inputs, engine="fixed").item() - cropped) <= 1e-12 * max(1.0, abs(cropped))
    expected = _port_mean("grad", list(zip(pred, gt, trimap)), True)
    _assert_close(cropped, expected, "grad")


def test_gradient_engines_agree_and_a_bad_engine_is_refused():
    samples = _samples(4, [(37, 53), (1, 17), (33, 70)])
    preds, gts, trimaps = (list(column) for column in zip(*samples))
    expected = F.gradient_error(preds, gts, trimaps, engine="data_sized")
    metric = nm.GradientError(engine="fixed")
    metric.update(preds, gts, trimaps)
    assert torch.allclose(metric.compute(), expected, rtol=1e-12, atol=0.0)
    with pytest.raises(ValueError, match="engine"):
        F.gradient_error(preds, gts, engine="sync_free")
    with pytest.raises(ValueError, match="engine"):
        nm.GradientError(engine=None)


@pytest.mark.parametrize("with_trimap", [False, True])
def test_gradient_of_uint8_levels_equals_the_float64_path(with_trimap):
    """uint8 mattes go through a per-image 256-entry mat2gray table and index padding; float64 ``x / 255``
    mattes through mat2gray and ``F.pad``: the same numbers (lists of mixed sizes, trimap boxes at borders)."""
    triples = cases(5)
    preds, gts, trimaps = ([torch.from_numpy(a) for a in column] for column in zip(*triples))
    as_float = [[p.double() / 255 for p in column] for column in (preds, gts)]
    options = {"trimap": trimaps if with_trimap else None}
    levels = F.gradient_error(preds, gts, **options).item()
    floats = F.gradient_error(*as_float, **options).item()
    assert abs(levels - floats) <= 1e-13 * max(1.0, abs(floats))


@pytest.mark.parametrize("shape", [(41, 67), (1, 30), (30, 1), (9, 9), (5, 12)])
def test_gradient_filters_only_where_the_map_varies(shape):
    """On CPU each map is filtered on the box of its non-constant windows (a binary gt, a saturated
    prediction); ``engine="fixed"`` (a GPU's default) filters the whole image. Same values: single changed pixels
    at corners and borders, discs touching the border, constant maps, with and without a trimap."""
    rng = np.random.default_rng(sum(shape))
    h, w = shape
    gt = np.zeros((4, h, w), np.uint8)
    gt[0, -1, -1] = 255  # one pixel in the last corner
    gt[1, 0, w // 2] = 255  # one pixel on the top border
    yy, xx = np.mgrid[0:h, 0:w]
    gt[2] = np.where((yy - h) ** 2 + (xx - w / 3) ** 2 <= (h * h + w * w) / 9, 255, 0)  # a disc cut by the border
    pred = np.where(rng.random(gt.shape) < 0.05, rng.integers(0, 256, gt.shape), gt).astype(np.uint8)
    pred[3] = 200  # constant prediction, empty gt
    trimap = np.where(rng.random(gt.shape) < 0.3, 128, 0).astype(np.uint8)
    inputs = [torch.from_numpy(a) for a in (pred, gt)]
    for options in ({}, {"trimap": torch.from_numpy(trimap)}):
        boxed = F.gradient_error(*inputs, **options).item()
        floats = F.gradient_error(*[t.double() / 255 for t in inputs], **options).item()
        whole = F.gradient_error(*inputs, **options, engine="fixed").item()
        assert abs(boxed - whole) <= 1e-12 * max(1.0, abs(whole))
        assert abs(floats - whole) <= 1e-12 * max(1.0, abs(whole))
        triples = list(zip(pred, gt, trimap))
        _assert_close(boxed, _port_mean("grad", triples, "trimap" in options), "grad")
