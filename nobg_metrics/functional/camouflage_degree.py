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
takes the smallest, ties to the lowest candidate index as sklearn's brute-force heap does (it keeps the first of equal distances; 149 features: ``algorithm="auto"`` is brute
force). sklearn itself ranks by the matrix-product
form in float64, so where two candidates lie within its ~1e-9 rounding of each other it may pick the other.

**Sizes are the data's.** The number of patches differs per image, so the search runs image by image on the valid
patches (read from the device once per image); only the patches' pixels are converted to Lab, the reconstruction is
an exact integer ``index_add`` of the matched patches, and the colour difference is evaluated, batched, on the gt
pixels (``cd`` is 0 elsewhere).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from nobg_metrics.ops.lab import ciede2000, opencv_rgb_to_lab, skimage_rgb_to_lab

PATCH = 7
STRIDE = 3
SURROUND = 20
_QUERY_BLOCK_ELEMENTS = 1 << 22
"""Distance-matrix entries per block of queries (16 MB of float32: blocks of 100s of queries keep the matrix product efficient;
smaller ones, cache-sized, made it 2x slower)."""

_EPS = float(torch.finfo(torch.float64).eps)
_EPS32 = float(torch.finfo(torch.float32).eps)
_COORDINATES = 2
"""The last two features of a patch: its scaled corner coordinates (the rest are Lab integers)."""


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

    Example:
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


def nearest_background(queries: Tensor, candidates: Tensor) -> Tensor:
    """Index of each query's nearest candidate (Euclidean; exact ties to the lower index).

    Every candidate is ranked by ``|x|² - 2 q·x`` (one float32 matrix product of the features centred on the
    candidates' mean, augmented by a column of ones / of ``|x|²``: the Lab products stay exact integers), in blocks
    of queries small enough for the cache; a query whose two lowest values lie further apart than a bound of that
    product's rounding has its answer (the lowest); for the others every candidate within the bound of the lowest is
    recomputed directly in float64, ``Σ (q - x)²``, and the smallest, then the lowest index, wins (sklearn's
    brute-force heap keeps the first of equal distances). The ambiguous queries and their near candidates are
    data-sized lists (host reads off CPU). The features' last two columns are the coordinates, the others integers.

    Args:
        queries: :math:`(Q, D)` float64 (float32 values).
        candidates: :math:`(N, D)` float64.

    Returns:
        :math:`(Q,)` int64.

    Example:
        >>> x = torch.tensor([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [4.0, 0.0, 0.0]], dtype=torch.float64)
        >>> q = torch.tensor([[1.0, 0.0, 0.0], [3.0, 0.0, 0.1]], dtype=torch.float64)
        >>> nearest_background(q, x).tolist()  # a tie at the first: the lower index
        [0, 1]
    """
    count = candidates.shape[0]
    if count == 1:
        return torch.zeros(queries.shape[0], dtype=torch.int64, device=queries.device)
    # the ranking in float32 on features centred by the candidates' mean (rounded on the integer Lab part, so those
    # products stay exact): [q', 1] · [-2 x', |x'|²] with a rounding bound of the products' size (generous: near sets
    # stay small)
    shift = candidates.mean(dim=0)
    shift[: -_COORDINATES] = shift[: -_COORDINATES].round()  # a local tensor
    centred_queries, centred = queries - shift, candidates - shift
    squares = centred.pow(2).sum(dim=1)
    ones = torch.ones(queries.shape[0], 1, dtype=torch.float32, device=queries.device)
    ranked_queries = torch.cat([centred_queries.float(), ones], dim=1)  # (Q, D + 1)
    ranked = torch.cat([-2 * centred.float(), squares.float()[:, None]], dim=1).T.contiguous()  # (D + 1, N)
    bound = (4 * _EPS32 * (candidates.shape[1] + 2) * (squares.max() + centred_queries.pow(2).sum(dim=1))
             + 0.01).float()
    block = max(1, _QUERY_BLOCK_ELEMENTS // count)
    best = torch.empty(queries.shape[0], dtype=torch.int64, device=queries.device)
    for start in range(0, queries.shape[0], block):  # blocks of the data-sized distance matrix
        stop = min(start + block, queries.shape[0])
        approximate = ranked_queries[start:stop] @ ranked
        two, index = approximate.topk(2, dim=1, largest=False)  # sorted: the lowest first
        best[start:stop] = index[:, 0]
        ambiguous = (two[:, 1] <= two[:, 0] + bound[start:stop]).nonzero()[:, 0]  # data-sized
        if ambiguous.numel() == 0:
            continue
        near = approximate[ambiguous] <= (two[ambiguous, 0] + bound[start:stop][ambiguous])[:, None]
        rows, cols = near.nonzero().unbind(1)  # data-sized
        exact = ((queries[start + ambiguous[rows]] - candidates[cols]) ** 2).sum(dim=1)
        fill = torch.full((ambiguous.numel(),), torch.inf, dtype=exact.dtype, device=exact.device)
        smallest = fill.scatter_reduce(0, rows, exact, "amin")
        tied = torch.where(exact == smallest[rows], cols, torch.full_like(cols, count))
        first = torch.full((ambiguous.numel(),), count, dtype=cols.dtype, device=cols.device)
        best[start + ambiguous] = first.scatter_reduce(0, rows, tied, "amin")
    return best


def _count_divisors(device: torch.device) -> Tensor:
    """The reference's per-pixel divisor for ``k`` covering patches: ``eps`` plus one ``k`` times, in float64
    (``k = 1``: ``1 + 2^-52``; ``k >= 2``: ``k``)."""
    values, total = [], _EPS
    for _ in range(PATCH * PATCH + 1):
        values.append(total)
        total = total + 1.0
    return torch.tensor(values, dtype=torch.float64, device=device)


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
    matched = nearest_background(features[bg_index.numel() :], features[: bg_index.numel()])
    targets, sources = pixels[bg_index.numel() :].flatten(), pixels[matched].flatten()
    sums = torch.zeros(3, height * width, dtype=torch.int64, device=image.device)
    sums = sums.index_add(1, targets, flat[:, sources].long())
    counts = torch.zeros(height * width, dtype=torch.int64, device=image.device)
    counts = counts.index_add(0, targets, torch.ones_like(targets))
    return torch.round(sums[:, wanted] / _count_divisors(image.device)[counts[wanted]]).to(torch.uint8)


def camouflage_degree(image: Tensor, gt: Tensor, *, gamma: float = 8.0, lambda_spatial: float = 20.0) -> Tensor:
    """The reference's camouflage degree map per image (see the module notes).

    Args:
        image: :math:`(B, 3, H, W)` uint8 RGB.
        gt: :math:`(B, H, W)` bool.
        gamma: γ, the sharpness of the degree.
        lambda_spatial: λ, the weight of the standardised patch coordinates in the search.

    Returns:
        :math:`(B, H, W)` float64 in [0, 1], zero off the gt.

    Example:
        >>> image = torch.full((1, 3, 40, 40), 90, dtype=torch.uint8); gt = torch.zeros(1, 40, 40, dtype=torch.bool)
        >>> gt[0, 12:28, 12:28] = True; image[0, :, 12:28, 12:28] = 100  # a grey object on a darker grey
        >>> cd = camouflage_degree(image, gt)
        >>> round(cd[0, 14, 14].item(), 6), round(cd[0, 27, 27].item(), 6), cd[0, 0, 0].item()
        (0.746631, 0.746631, 0.0)
    """
    batch, _, height, width = image.shape
    similarity = torch.zeros(batch, height, width, dtype=torch.float64, device=image.device)
    if height >= PATCH and width >= PATCH:
        background = surrounding_background(gt)
        valid_fg, valid_bg = _full_patches(gt), _full_patches(background)
        # the reconstruction and the colour difference on the gt pixels only (cd is 0 elsewhere), image by image (the
        # search's sizes are each image's own); without fg or bg patches the similarity stays 0
        rebuilt = (valid_fg.flatten(1).any(dim=1) & valid_bg.flatten(1).any(dim=1)).tolist()  # a host read
        parts = [(b, gt[b].flatten().nonzero()[:, 0]) for b in range(batch) if rebuilt[b]]  # data-sized
        parts = [(b * height * width + wanted, _reconstruct(image[b], valid_fg[b], valid_bg[b], lambda_spatial, wanted),
                  image[b].flatten(1)[:, wanted]) for b, wanted in parts]  # img * fg on the gt
        empty = torch.zeros(3, 0, dtype=torch.uint8, device=image.device)
        inside = torch.cat([torch.zeros(0, dtype=torch.int64, device=image.device)] + [p[0] for p in parts])
        rebuilt_rgb = torch.cat([empty] + [p[1] for p in parts], dim=1)
        original_rgb = torch.cat([empty] + [p[2] for p in parts], dim=1)
        difference = ciede2000(skimage_rgb_to_lab(rebuilt_rgb[None, :, :, None]),
                               skimage_rgb_to_lab(original_rgb[None, :, :, None]))[0, :, 0]
        similarity = similarity.flatten().index_copy(0, inside, 1 - (difference / 100).clamp(0, 1))
        similarity = similarity.view(batch, height, width)
    # cd = (np.exp(gamma * similarity_matrix * mask_binary) - 1) / (np.exp(gamma) - 1)
    return (torch.exp(gamma * similarity * gt) - 1) / (math.exp(gamma) - 1)
