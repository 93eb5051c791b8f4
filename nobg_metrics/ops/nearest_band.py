"""The nearest feature pixel of the pixels close to the features, with scipy's choice among equidistant ones.

Among several feature pixels at the same distance scipy's ``distance_transform_edt(return_indices=True)`` returns
the one with the smallest column, then the smallest row (its passes keep the earlier site on ties: the
lexicographic minimum of ``(D, column, row)``). :func:`nearest_in_band` finds it for the pixels with
``1 <= D <= max_squared`` from :func:`nobg_metrics.ops.distance.bounded_nearest`, whose row pass gives ``D`` and
the leftmost column ``x`` reaching it: the feature is at ``(i - dy, x)`` or ``(i + dy, x)``, ``dy^2 = D - (j -
x)^2``, the upper one when both are features. Three gathers per pixel, no second transform.

The weighted F-measure needs this on the pixels within Chebyshev distance 3 of the gt (``D <= 18``, see
docs/weighted_f_measure.md). Where host reads are free (CPU) only those pixels are visited (one ``nonzero``);
elsewhere every pixel of the crop is, and pixels outside the band point at themselves (no sync).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.distance import BoundedNearest


class BandIndex(NamedTuple):
    """Nearest feature pixels of the band pixels of a crop of a :math:`(B, H, W)` batch, in the crop's flat
    :math:`(B, h, w)` indices.

    Attributes:
        targets: :math:`(N,)` int64 band pixels, or ``None``: every crop pixel, in order (the sync-free path).
        sources: :math:`(N,)` int64 their nearest feature pixels (off the band, on the sync-free path: themselves).
    """

    targets: Tensor | None
    sources: Tensor

    def spread(self, values: Tensor, rows: slice, cols: slice) -> Tensor:
        """The crop ``[rows, cols]`` of ``values`` with each band pixel's value replaced by its nearest feature
        pixel's: :math:`(B, h, w)`, a new tensor.

        Args:
            values: :math:`(B, H, W)` map.
            rows, cols: the crop the index was built on.
        """
        crop = values[:, rows, cols]
        if self.targets is None:
            return crop.reshape(-1).index_select(0, self.sources).view(crop.shape)
        crop = crop.clone(memory_format=torch.contiguous_format)
        flat = crop.view(-1)
        flat.index_copy_(0, self.targets, flat.index_select(0, self.sources))  # sources are never targets
        return crop


def nearest_in_band(features: Tensor, nearest: BoundedNearest, max_squared: int, rows: slice,
                    cols: slice) -> BandIndex:
    """:class:`BandIndex` of the pixels of the crop ``[rows, cols]`` with ``1 <= D <= max_squared``.

    ``nearest`` gives each pixel's ``D`` and scipy's column ``x`` of its nearest feature (the leftmost of the
    equidistant ones); the feature is then at ``(i -+ dy, x)`` with ``dy = sqrt(D - (j - x)^2)``, and scipy takes
    the upper one when both are features. The crop must hold the nearest feature pixel of each of its band
    pixels (a box around the features with a margin does).

    Args:
        features: :math:`(B, H, W)` bool.
        nearest: :func:`nobg_metrics.ops.distance.bounded_nearest` of ``features``, exact at least up to
            ``max_squared``.
        max_squared: the band's reach, at most 24.
        rows, cols: the crop.

    Returns:
        :class:`BandIndex`.

    Examples:
        >>> from nobg_metrics.ops.distance import bounded_nearest
        >>> features = torch.tensor([[[False, True, False], [True, False, False]]])
        >>> band = nearest_in_band(features, bounded_nearest(features, 2), 2, slice(0, 2), slice(0, 3))
        >>> band.targets.tolist(), band.sources.tolist()  # (0, 0): column 0 (row 1) before column 1 (row 0)
        ([0, 2, 4, 5], [3, 1, 3, 1])
    """
    if not 0 <= max_squared <= 24:
        raise ValueError(f"`max_squared` must be in [0, 24], got {max_squared}")
    squared, site, positions = nearest
    device = squared.device
    batch, image_height, image_width = squared.shape
    crop = squared[:, rows, cols]
    _, height, width = crop.shape
    pad = math.isqrt(max_squared)
    padded = torch.nn.functional.pad(features[:, rows, cols].view(torch.uint8), (pad, pad, pad, pad)).view(-1)
    padded_width = width + 2 * pad
    padded_area = (height + 2 * pad) * padded_width
    # int32 index arithmetic where every index fits (int64 multiplies and divisions are ~2x slower on CPU)
    dtype = torch.int32 if max(squared.numel(), padded.numel()) < 2**31 else torch.int64
    device_path = not host_reads.free_on(squared)
    if device_path:  # every crop pixel: no host read; off the band the pixel itself
        targets = None
        own = torch.arange(batch * height * width, device=device, dtype=dtype)
    else:  # the band's pixels only
        targets = torch.nonzero(((crop >= 1) & (crop <= max_squared)).view(-1)).view(-1)
        own = targets.to(dtype)
    # (image, row, column) of each pixel in the crop; its index in the whole map and in the padded crop
    image = own.div(height * width, rounding_mode="floor") if batch > 1 else None
    rest = own if image is None else own - image * (height * width)
    row = rest.div(width, rounding_mode="floor")
    column = rest - row * width
    at = own + row * (image_width - width) + (rows.start * image_width + cols.start)
    anchor = own + row * (2 * pad) + (pad * padded_width + pad)
    if image is not None:
        at += image * (image_height * image_width - height * width)
        anchor += image * (padded_area - height * width)
    distance = squared.reshape(-1).index_select(0, at)
    nearest_site = site.reshape(-1).index_select(0, at)
    if image is not None:
        nearest_site += image * positions.shape[2]
    # the nearest feature's column offset (scipy's column), then its row offset from D = dx^2 + dy^2
    dx = positions.to(dtype).reshape(-1).index_select(0, nearest_site).sub_(column + cols.start)
    if device_path:  # off the band: the pixel itself
        off_band = (distance < 1) | (distance > max_squared)
        dx.masked_fill_(off_band, 0)
    dy = _roots(device, dtype).index_select(0, (distance - dx * dx).clamp_(0, 24))
    if device_path:
        dy.masked_fill_(off_band, 0)
    upper = padded.index_select(0, anchor.add_(dx).sub_(dy * padded_width)).bool()
    dy = torch.where(upper, -dy, dy)  # the upper one where both are features (scipy's tie rule)
    return BandIndex(targets, own.add_(dx).add_(dy * width).long())


@functools.lru_cache(maxsize=8)
def _roots(device: torch.device, dtype: torch.dtype) -> Tensor:
    """``sqrt(n)`` of the squares ``n <= 24`` (0 elsewhere): the row offset from ``D - dx^2``. Made once per
    device (no host-to-device copy inside an update)."""
    roots = [math.isqrt(n) if math.isqrt(n) ** 2 == n else 0 for n in range(25)]
    return torch.tensor(roots, dtype=dtype).to(device)


