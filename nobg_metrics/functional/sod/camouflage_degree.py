"""The camouflage degree ``cd`` of the camouflage context measure CCm (Wang et al. 2025; PySODMetrics 1.6.2
``CamouflageContextMeasure._calculate_camouflage_degree``): how well the object is rebuilt from its surroundings.

Reference, per image (RGB uint8 ``img``, gt mask ``fg``; ``w = 7``, stride ``d = 3``, λ = 20, γ = 8)::

    bg        = dilate(fg, ones(20, 20)) - fg                 # the surrounding background (cv2 anchor (10, 10))
    lab       = cv2.cvtColor(img, COLOR_RGB2Lab)              # uint8, ops.lab.opencv_rgb_to_lab
    patches   = 7 x 7 windows at rows, columns 0, 3, 6, ... lying wholly in fg (queries) / bg (candidates),
                features = their 147 Lab values (row-major patch order)
    coords    = StandardScaler over the patch corners of [bg; fg];  features += λ · coords; float32
    nn        = sklearn NearestNeighbors(1, euclidean).kneighbors(fg features) among the bg features
    recon     = round(Σ over fg patches of img[matched bg patch] / (count + eps)), uint8   (np.round: half to even)
    sim       = 1 - clip(deltaE_ciede2000(rgb2lab(recon), rgb2lab(img · fg)) / 100, 0, 1)   # scikit-image
    cd        = (exp(γ · sim · fg) - 1) / (exp(γ) - 1)
    no fg patch or no bg patch (small objects, thin rings, images under 7 px): cd = 0

**Nearest neighbour, exactly.** The Lab part of a squared distance is an integer (exact in float64 in any order);
the coordinate part is a sum of squared differences of float32 values. The search ranks all candidates by the
matrix-product form ``|x|² - 2 q·x`` (one float32 product of centred, augmented features per block of queries: the
Lab products are exact integers), takes the lowest where the second lowest lies beyond a rounding bound, and
otherwise recomputes the candidates within the bound directly (``Σ (q - x)²`` in float64: exact to rounding) and
takes the smallest, ties to the lowest candidate index as sklearn's brute-force heap does (it keeps the first of
equal distances; 149 features: ``algorithm="auto"`` is brute force). sklearn itself ranks by the matrix-product
form in float64, so where two candidates lie within its ~1e-9 rounding of each other it may pick the other.

**Two paths**, one switch (``engine`` of :func:`camouflage_degree`, which the CCm functional and metric pass down;
docs/context_measure.md, "Without host syncs"):

- ``"data_sized"`` (``"auto"`` on CPU, or asked for): the sizes are the data's — the search runs image by image on the
  valid patches (read from the device per image); only the patches' pixels are converted to Lab, the reconstruction is
  an exact integer ``index_add`` of the matched patches, and the colour difference is evaluated on the gt pixels.
- ``"fixed"`` (``"auto"`` off CPU, or asked for): every position of the stride-3 grid is a patch, with fg / bg masks;
  the batched search (the ``"fixed"`` :func:`~nobg_metrics.ops.ccm_search.nearest_background`) ranks invalid candidates
  at ``+inf`` and recomputes a fixed near set per query; the whole images are converted and compared; an image whose
  near set overflowed is NaN (``camouflage_context_measure`` and ``CamouflageContextMeasure.compute`` then raise).

Both give the same numbers (tested with the device path forced on CPU).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.ccm_search import nearest_background
from nobg_metrics.ops.lab import ciede2000, opencv_rgb_to_lab, skimage_rgb_to_lab

__all__ = ["camouflage_degree"]

PATCH = 7
STRIDE = 3
SURROUND = 20
_EPS = float(torch.finfo(torch.float64).eps)


def _window_any(mask: Tensor, dim: int, before: int, size: int) -> Tensor:
    """Whether any of ``mask[..., i - before : i - before + size, ...]`` (along ``dim``, zero outside) is set, by a
    running count: ``C[min(i - before + size, L)] - C[max(i - before, 0)]`` with ``C`` the counts before each index.
    :math:`(B, H, W)` bool -> bool (a binary max filter, without max pooling's index bookkeeping)."""
    length = mask.shape[dim]
    counts = mask.to(torch.int32).cumsum(dim, dtype=torch.int32)
    counts = torch.cat([torch.zeros_like(counts.narrow(dim, 0, 1)), counts], dim=dim)  # C[0] = 0
    position = torch.arange(length, device=mask.device) - before
    upper = counts.index_select(dim, (position + size).clamp(0, length))
    lower = counts.index_select(dim, position.clamp(0, length))
    return upper > lower


def surrounding_background(gt: Tensor) -> Tensor:
    """``cv2.dilate(gt, ones((20, 20))) - gt``: the pixels within the 20 x 20 window (rows ``i - 10 .. i + 9``, as
    OpenCV's centred anchor puts it) of a gt pixel, outside the gt. :math:`(B, H, W)` bool -> bool.

    Examples:
        >>> gt = torch.zeros(1, 30, 30, dtype=torch.bool); gt[0, 15, 15] = True
        >>> ring = surrounding_background(gt)[0]
        >>> int(ring.sum()), bool(ring[6, 6]), bool(ring[5, 5]), bool(ring[25, 25]), bool(ring[26, 26])
        (399, True, False, True, False)
    """
    half = SURROUND // 2  # cv2's anchor: pixel i is set by a gt pixel among i - 10 .. i + 9
    grown = _window_any(_window_any(gt, 1, half, SURROUND), 2, half, SURROUND)
    return grown & ~gt


def _full_patches(mask: Tensor) -> Tensor:
    """:math:`(B, n_r, n_c)` bool: the 7 x 7 patch at ``(3 i, 3 j)`` lies wholly in ``mask``."""
    return F.max_pool2d((~mask)[:, None].float(), PATCH, stride=STRIDE)[:, 0] == 0


def _standardised(coords: Tensor) -> Tensor:
    """sklearn ``StandardScaler().fit_transform`` of :math:`(N, 2)` integer coordinates, float64: population
    variance ``(Σ t² - (Σ t)² / n) / n`` of ``t = x - Σx / n``, a constant column scaled by 1."""
    values = coords.double()
    count = values.shape[0]
    mean = values.sum(dim=0) / count
    centred = values - mean
    variance = ((centred**2).sum(dim=0) - centred.sum(dim=0) ** 2 / count) / count
    constant = variance <= count * _EPS * variance + (count * mean * _EPS) ** 2
    scale = torch.where(constant, torch.ones_like(variance), variance.sqrt())
    return (values - mean) / scale


def _count_divisors(device: torch.device) -> Tensor:
    """The reference's per-pixel divisor for ``k`` covering patches: ``eps`` plus one ``k`` times, in float64
    (``k = 0``: ``eps``; ``k = 1``: ``1 + 2^-52``; ``k >= 2``: ``k``, the half ulp rounded to even), built on the
    device (no host copy)."""
    level = torch.arange(PATCH * PATCH + 1, dtype=torch.float64, device=device)
    return torch.where(level == 0, _EPS, torch.where(level == 1, 1 + _EPS, level))


def _patch_pixels(index: Tensor, n_cols: int, width: int) -> Tensor:
    """Flat pixel indices :math:`(P, 49)` of the patches at grid positions ``index`` (row-major in each patch)."""
    offsets = torch.arange(PATCH, device=index.device)
    offsets = (offsets[:, None] * width + offsets).flatten()
    return ((index // n_cols) * STRIDE * width + (index % n_cols) * STRIDE)[:, None] + offsets


def _reconstruct(image: Tensor, valid_fg: Tensor, valid_bg: Tensor, lambda_spatial: float, wanted: Tensor) -> Tensor:
    """The reference's ``img_recon`` of one image at the flat pixel indices ``wanted``, :math:`(3, n)` uint8 (the
    image has fg and bg patches): the matched background patches summed onto the fg patches (int64: exact) over the
    covering counts."""
    _, height, width = image.shape
    n_cols = valid_fg.shape[1]
    flat = image.flatten(1)
    fg_index, bg_index = valid_fg.flatten().nonzero()[:, 0], valid_bg.flatten().nonzero()[:, 0]  # data-sized
    index = torch.cat([bg_index, fg_index])
    pixels = _patch_pixels(index, n_cols, width)  # (P, 49)
    if pixels.numel() > height * width:  # overlapping patches: converting the whole image once is less work
        lab = opencv_rgb_to_lab(flat[None])[0][:, pixels]  # (3, P, 49)
    else:
        lab = opencv_rgb_to_lab(flat[:, pixels][None])[0]  # (3, P, 49): only the patches' pixels
    corners = torch.stack([index // n_cols, index % n_cols], dim=1) * STRIDE
    spatial = (lambda_spatial * _standardised(corners)).float().double()  # np.hstack(...).astype(np.float32)
    features = torch.cat([lab.permute(1, 2, 0).flatten(1).double(), spatial], dim=1)
    is_candidate = (torch.arange(index.numel(), device=image.device) < bg_index.numel())[None]  # bg first, then fg
    nearest, _ = nearest_background(features[None], ~is_candidate, is_candidate, engine="data_sized")
    matched = nearest[0, bg_index.numel():]
    targets, sources = pixels[bg_index.numel() :].flatten(), pixels[matched].flatten()
    sums = torch.zeros(3, height * width, dtype=torch.int64, device=image.device)
    sums = sums.index_add(1, targets, flat[:, sources].long())
    counts = torch.zeros(height * width, dtype=torch.int64, device=image.device)
    counts = counts.index_add(0, targets, torch.ones_like(targets))
    return torch.round(sums[:, wanted] / _count_divisors(image.device)[counts[wanted]]).to(torch.uint8)


def _standardised_masked(coords: Tensor, weights: Tensor) -> Tensor:
    """:func:`_standardised` over the positions ``weights`` marks, for every image: :math:`(G, 2)` integer
    coordinates, :math:`(B, G)` bool -> :math:`(B, G, 2)` float64 (fixed shapes; sums in another order: to ~1 ulp)."""
    values, weight = coords.double()[None], weights.double()[..., None]
    count = weight.sum(dim=1).clamp(min=1)  # (B, 1)
    mean = (values * weight).sum(dim=1) / count
    centred = values - mean[:, None]
    variance = (((centred**2) * weight).sum(dim=1) - (centred * weight).sum(dim=1) ** 2 / count) / count
    constant = variance <= count * _EPS * variance + (count * mean * _EPS) ** 2
    scale = torch.where(constant, torch.ones_like(variance), variance.sqrt())
    return (values - mean[:, None]) / scale[:, None]


def _similarity_data(image: Tensor, gt: Tensor, valid_fg: Tensor, valid_bg: Tensor, lambda_spatial: float) -> Tensor:
    """The similarity map ``1 - clip(ΔE / 100, 0, 1)`` on the gt (0 elsewhere and without fg or bg patches), image by
    image on the data-sized patch sets (host reads)."""
    batch, _, height, width = image.shape
    similarity = torch.zeros(batch, height, width, dtype=torch.float64, device=image.device)
    rebuilt = (valid_fg.flatten(1).any(dim=1) & valid_bg.flatten(1).any(dim=1)).tolist()  # a host read
    wanted_pixels = [(b, gt[b].flatten().nonzero()[:, 0]) for b in range(batch) if rebuilt[b]]  # data-sized
    parts = [(b * height * width + wanted, _reconstruct(image[b], valid_fg[b], valid_bg[b], lambda_spatial, wanted),
              image[b].flatten(1)[:, wanted]) for b, wanted in wanted_pixels]  # img * fg on the gt
    empty = torch.zeros(3, 0, dtype=torch.uint8, device=image.device)
    inside = torch.cat([torch.zeros(0, dtype=torch.int64, device=image.device)] + [p[0] for p in parts])
    rebuilt_rgb = torch.cat([empty] + [p[1] for p in parts], dim=1)
    original_rgb = torch.cat([empty] + [p[2] for p in parts], dim=1)
    difference = ciede2000(skimage_rgb_to_lab(rebuilt_rgb[None, :, :, None]),
                           skimage_rgb_to_lab(original_rgb[None, :, :, None]))[0, :, 0]
    similarity = similarity.flatten().index_copy(0, inside, 1 - (difference / 100).clamp(0, 1))
    return similarity.view(batch, height, width)


def _similarity_fixed(image: Tensor, gt: Tensor, valid_fg: Tensor, valid_bg: Tensor,
                      lambda_spatial: float) -> tuple[Tensor, Tensor]:
    """:func:`_similarity_data` without host reads: every grid position is a patch, with the fg / bg masks; the
    whole images go through the Lab conversions and ΔE. Also the :math:`(B,)` bool overflow flags of the search."""
    batch, _, height, width = image.shape
    n_cols = valid_fg.shape[2]
    fg, bg = valid_fg.flatten(1), valid_bg.flatten(1)  # (B, G)
    rebuilt = fg.any(dim=1) & bg.any(dim=1)  # (B,): without fg or bg patches the similarity stays 0
    grid = torch.arange(fg.shape[1], device=image.device)
    pixels = _patch_pixels(grid, n_cols, width)  # (G, 49)
    flat = image.flatten(2)  # (B, 3, H W)
    lab = opencv_rgb_to_lab(image).flatten(2)[:, :, pixels]  # (B, 3, G, 49)
    corners = torch.stack([grid // n_cols, grid % n_cols], dim=1) * STRIDE
    spatial = (lambda_spatial * _standardised_masked(corners, fg | bg)).float().double()
    features = torch.cat([lab.permute(0, 2, 3, 1).flatten(2).double(), spatial], dim=2)  # (B, G, 149)
    matched, overflow = nearest_background(features, fg, bg, engine="fixed")
    weight = (fg & rebuilt[:, None])[..., None].expand(-1, -1, PATCH * PATCH).flatten(1)  # (B, G 49)
    sources = pixels[matched].flatten(1)[:, None].expand(-1, 3, -1)  # (B, 3, G 49)
    targets = pixels.flatten().expand(batch, 3, -1)
    values = flat.long().gather(2, sources) * weight[:, None]
    sums = torch.zeros(batch, 3, height * width, dtype=torch.int64, device=image.device).scatter_add(2, targets, values)
    counts = torch.zeros(batch, height * width, dtype=torch.int64, device=image.device)
    counts = counts.scatter_add(1, targets[:, 0], weight.long())
    divisors = _count_divisors(image.device)[counts][:, None]
    recon = torch.round(sums / divisors).to(torch.uint8).view(batch, 3, height, width)
    difference = ciede2000(skimage_rgb_to_lab(recon), skimage_rgb_to_lab(image))
    similarity = torch.where(gt & rebuilt[:, None, None], 1 - (difference / 100).clamp(0, 1), 0.0)
    return similarity, overflow & rebuilt


OVERFLOW_MESSAGE = ("CCm: the sync-free device path found more than NEAR_CANDIDATES (ops/ccm_search.py) background "
                    "patches within the float32 rounding bound of a foreground patch's nearest one for at least one "
                    "image (its camouflage degree is NaN, its CCm +inf). Pass engine=\"data_sized\" to size the search "
                    "by the data (exact on any input).")
"""The error of :func:`check_overflow`: an infinite CCm only comes from a search whose near set overflowed."""


def check_overflow(value: Tensor) -> Tensor:
    """Raise ``RuntimeError(OVERFLOW_MESSAGE)`` if ``value`` is infinite (one host read), else return it.

    An image whose search overflowed has the CCm value +inf (``camouflage_context_measure``'s marker; CCm is finite
    otherwise). A NaN is not an overflow: no image was scored (0 / 0), or a NaN input pixel was let through by
    ``validate_args=False`` (the caller's; it makes the value NaN as in every metric) — returned as it is."""
    return host_reads.raise_if_inf(value, OVERFLOW_MESSAGE)


def camouflage_degree(image: Tensor, gt: Tensor, *, gamma: float = 8.0, lambda_spatial: float = 20.0,
                      engine: host_reads.Engine = "auto") -> Tensor:
    """The reference's camouflage degree map per image (see the module notes).

    ``engine="data_sized"`` (the default ``"auto"`` on CPU): the search runs on
    each image's data-sized patch sets (host reads); ``"fixed"`` (``"auto"`` off CPU): on every grid position with
    masks (no host read), where an image whose search overflowed its fixed near set
    (:data:`~nobg_metrics.ops.ccm_search.NEAR_CANDIDATES`) is NaN.

    Args:
        image: :math:`(B, 3, H, W)` uint8 RGB.
        gt: :math:`(B, H, W)` bool.
        gamma: γ, the sharpness of the degree.
        lambda_spatial: λ, the weight of the standardised patch coordinates in the search.
        engine: ``"data_sized"``, ``"fixed"`` or ``"auto"`` (above; :data:`~nobg_metrics.ops.host_reads.Engine`).

    Returns:
        :math:`(B, H, W)` float64 in [0, 1], zero off the gt (NaN: see above).

    Examples:
        >>> image = torch.full((1, 3, 40, 40), 90, dtype=torch.uint8); gt = torch.zeros(1, 40, 40, dtype=torch.bool)
        >>> gt[0, 12:28, 12:28] = True; image[0, :, 12:28, 12:28] = 100  # a grey object on a darker grey
        >>> cd = camouflage_degree(image, gt)
        >>> round(cd[0, 14, 14].item(), 6), round(cd[0, 27, 27].item(), 6), cd[0, 0, 0].item()
        (0.746631, 0.746631, 0.0)
    """
    batch, _, height, width = image.shape
    similarity = torch.zeros(batch, height, width, dtype=torch.float64, device=image.device)
    overflow = None
    if height >= PATCH and width >= PATCH:  # shapes only
        background = surrounding_background(gt)
        valid_fg, valid_bg = _full_patches(gt), _full_patches(background)
        if host_reads.resolve_engine(engine, image) == "data_sized":
            similarity = _similarity_data(image, gt, valid_fg, valid_bg, lambda_spatial)
        else:
            similarity, overflow = _similarity_fixed(image, gt, valid_fg, valid_bg, lambda_spatial)
    # cd = (np.exp(gamma * similarity_matrix * mask_binary) - 1) / (np.exp(gamma) - 1)
    degree = (torch.exp(gamma * similarity * gt) - 1) / (math.exp(gamma) - 1)
    return degree if overflow is None else torch.where(overflow[:, None, None], torch.nan, degree)
