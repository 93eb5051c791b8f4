"""Border following of batched bool masks: the point sequences of
``cv2.findContours(mask, cv2.RETR_TREE, cv2.CHAIN_APPROX_NONE)``, in OpenCV's order and direction.

Reference: Suzuki & Abe, "Topological structural analysis of digitized binary images by border following",
CVGIP 30(1), 1985, as OpenCV 4.14 implements it (``findContours``: the image is padded with one background
pixel, foreground is 8-connected, background 4-connected). What this module reproduces, and how:

- **One border per (foreground component, adjacent background component).** The outer border of a
  foreground 8-component ``C`` starts at its raster-first pixel (whose left neighbour is background); the
  border of a hole ``H`` (a background 4-component other than the outside) starts at the pixel left of
  ``H``'s raster-first pixel (whose right neighbour is background) — the pixels where OpenCV's raster scan
  meets them (``f(i,j) = 1, f(i,j-1) = 0`` / ``f(i,j) >= 1, f(i,j+1) = 0``). A pixel with no foreground
  neighbour is a contour of one point.
- **The walk.** OpenCV's directions ``s = 0..7`` are E, NE, N, NW, W, SW, S, SE. At the start, the
  first foreground neighbour clockwise from NW (outer: 3, 2, 1, 0, 7, 6, 5) or from SE (hole: 7, 6, ..., 1)
  is ``i1``; the walk is a sequence of states (pixel ``p``, direction ``b`` back to the previous pixel):
  the next direction is the first foreground one among ``b+1, b+2, ..., b+8`` (counter-clockwise) and the
  next state is (``p + delta[d]``, ``d ^ 4``); the start state is (``i0``, direction of ``i1``). The walk
  ends when it would re-enter the start state, so a contour is the cycle of its start state, read from
  ``i0`` (every point written, pixels passed twice included).
- **All walks at once.** The successor of every state is local (a 256 × 8 table on the 8-neighbourhood
  code). Only *valid* states (back neighbour in the foreground) occur in walks, and on them the successor
  is injective, so no state enters a contour's cycle from outside; the distance of each state to its
  cycle's start comes from pointer jumping (log2 of the longest contour rounds), so each contour's points
  are placed without walking them one by one.
- **The order of the list.** OpenCV's ``RETR_TREE`` list is the contour tree in preorder with the
  children of a node (and the roots) in *descending* order of discovery (raster order of start pixels);
  the parent of ``C``'s outer border is the border of the hole left of ``C``'s first pixel, the parent of
  ``H``'s border the outer border of the component left of ``H``'s first pixel. Computed by levels of the
  tree (subtree sizes bottom-up, offsets top-down).

Two forms, one switch (``engine``, :data:`~nobg_metrics.ops.host_reads.Engine`), the same :class:`Contours`:

- ``"data_sized"`` (this module): index lists sized by the data (border pixels, states, contours) and one loop over
  tree depth; on CPU the batch is first cropped to the bounding box of its foreground. Host reads, free on CPU.
- ``"fixed"`` (:mod:`nobg_metrics.ops.contours_fixed`): a padded list of ``8 B (H+2) (W+2)`` entries, fixed round
  counts: no host read (the sync-free path on an accelerator).

``"auto"`` picks ``"data_sized"`` where host reads are free (CPU), else ``"fixed"``. Nothing loops over pixels or
points in Python.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.components import connected_components
from nobg_metrics.ops.contour_steps import DIRECTIONS, Contours, first_in_order, next_direction_table
from nobg_metrics.ops.contours_fixed import trace_fixed

__all__ = ["Contours", "find_contours"]


def find_contours(mask: Tensor, *, engine: host_reads.Engine = "auto") -> Contours:
    """``cv2.findContours(mask, RETR_TREE, CHAIN_APPROX_NONE)`` of each image of a batch, as one list of points.

    Args:
        mask: :math:`(B, H, W)` or :math:`(H, W)` bool.
        engine: ``"data_sized"`` (host reads), ``"fixed"`` (no host read, a padded list) or ``"auto"``
            (``"data_sized"`` where host reads are free, else ``"fixed"``); see the module notes.

    Returns:
        :class:`Contours`: the same values on the real points from either form.

    Examples:
        >>> ring = torch.ones(4, 4, dtype=torch.bool); ring[1:3, 1:3] = False
        >>> found = find_contours(ring)
        >>> torch.bincount(found.contour).tolist(), found.hole[[0, -1]].tolist()
        ([12, 8], [False, True])
        >>> found.points[:4].tolist()
        [[0, 0], [0, 1], [0, 2], [0, 3]]
        >>> fixed = find_contours(ring, engine="fixed")
        >>> int(fixed.real.sum()), torch.equal(fixed.points[fixed.real], found.points)
        (20, True)
    """
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"`mask` must be a bool tensor, got {getattr(mask, 'dtype', type(mask).__name__)}")
    if mask.ndim not in (2, 3):
        raise ValueError(f"`mask` must have shape (B, H, W) or (H, W), got {tuple(mask.shape)}")
    batch = mask.unsqueeze(0) if mask.ndim == 2 else mask
    if host_reads.resolve_engine(engine, batch) == "fixed":
        return trace_fixed(batch)
    box = host_reads.window(batch, 0)  # on CPU: trace the bounding box of the foreground (the padding is background)
    if (box.rows.stop - box.rows.start, box.cols.stop - box.cols.start) == tuple(batch.shape[1:]):
        return _find_contours(batch)
    found = _find_contours(batch[box.crop])
    found.points = found.points + torch.tensor([box.cols.start, box.rows.start], device=batch.device)
    return found


def _find_contours(batch: Tensor) -> Contours:
    """The ``"data_sized"`` form of :func:`find_contours` on a :math:`(B, H, W)` batch."""
    count, height, width = batch.shape
    device = batch.device
    stride, plane = width + 2, (height + 2) * (width + 2)
    padded = torch.zeros((count, height + 2, width + 2), dtype=torch.bool, device=device)
    padded[:, 1:-1, 1:-1] = batch
    flat = padded.view(-1)
    delta = torch.tensor([dy * stride + dx for dy, dx in DIRECTIONS], dtype=torch.int64, device=device)
    fg_labels = connected_components(padded, 8)
    bg_labels = connected_components(~padded, 4)
    fg_ids, fg_first = _global_labels(fg_labels)
    bg_ids, bg_first = _global_labels(bg_labels)

    # starts: outer borders (first pixel of each 8-component), holes (left of each hole's first pixel)
    outside = torch.zeros(bg_first.numel(), dtype=torch.bool, device=device)
    outside[bg_ids[torch.arange(count, device=device) * plane]] = True  # the padding's component
    hole_ids = torch.nonzero(~outside[1:]).flatten() + 1
    outer_start, hole_start = fg_first[1:], bg_first[hole_ids] - 1
    starts = torch.cat([outer_start, hole_start])
    is_hole = torch.cat([torch.zeros_like(outer_start, dtype=torch.bool),
                         torch.ones_like(hole_start, dtype=torch.bool)])

    # parents: outer border -> the border of the hole left of its first pixel (none for the outside),
    # hole border -> the outer border of the component left of its first pixel
    n_outer = outer_start.numel()
    node_of_hole = torch.full((bg_first.numel(),), -1, dtype=torch.int64, device=device)
    node_of_hole[hole_ids] = n_outer + torch.arange(hole_ids.numel(), device=device)
    surrounding = bg_ids[outer_start - 1]
    parent = torch.cat([torch.where(outside[surrounding], -1, node_of_hole[surrounding]),
                        fg_ids[hole_start] - 1])
    order = _tree_order(parent, starts, starts // plane, count)

    # border pixels: foreground with a background 8-neighbour, and their occupancy codes
    fg_index = torch.nonzero(flat).flatten()
    occupancy = flat[fg_index.unsqueeze(1) + delta]  # (F, 8)
    on_border = ~occupancy.all(dim=1)
    pixel, occupancy = fg_index[on_border], occupancy[on_border]
    border_id = torch.full((flat.numel(),), -1, dtype=torch.int64, device=device)
    border_id[pixel] = torch.arange(pixel.numel(), device=device)
    start_occupancy = occupancy[border_id[starts]]
    first_dir = torch.where(is_hole, first_in_order(start_occupancy, (7, 6, 5, 4, 3, 2, 1)),
                            first_in_order(start_occupancy, (3, 2, 1, 0, 7, 6, 5)))
    lengths, points = _walk(pixel, occupancy, border_id, delta, border_id[starts], first_dir, order)
    rows, cols = (points % plane) // stride - 1, points % stride - 1
    contour = torch.repeat_interleave(torch.arange(lengths.numel(), device=device), lengths)  # data-sized
    components = fg_labels.flatten(1).amax(dim=1) if count else torch.zeros(0, dtype=torch.int64, device=device)
    return Contours(points=torch.stack([cols, rows], dim=1), real=torch.ones_like(points, dtype=torch.bool),
                    image=(starts[order] // plane)[contour], contour=contour, hole=is_hole[order][contour],
                    component=fg_labels.view(-1)[points], components=components)


def _global_labels(labels: Tensor) -> tuple[Tensor, Tensor]:
    """Per-image labels made unique over the batch (flat, 0 stays 0) and the raster-first flat index of
    every id (entry 0 unused)."""
    per_image_max = labels.flatten(1).amax(dim=1) if labels.numel() else labels.new_zeros(labels.shape[0])
    offsets = torch.cumsum(per_image_max, 0) - per_image_max
    ids = torch.where(labels > 0, labels + offsets.view(-1, 1, 1), 0).view(-1)
    total = int(per_image_max.sum())
    first = torch.full((total + 1,), ids.numel(), dtype=torch.int64, device=labels.device)
    first = first.scatter_reduce(0, ids, torch.arange(ids.numel(), device=labels.device), "amin")
    return ids, first


def _tree_order(parent: Tensor, key: Tensor, image: Tensor, count: int) -> Tensor:
    """Node indices in OpenCV's RETR_TREE order: per image, preorder with siblings (and roots) by descending
    ``key``. One round per tree level (subtree sizes bottom-up, preorder numbers top-down)."""
    nodes = parent.numel()
    device = parent.device
    if nodes == 0:
        return torch.zeros(0, dtype=torch.int64, device=device)
    up = torch.where(parent < 0, nodes + image, parent)  # virtual root per image: nodes + image
    depth = torch.zeros(nodes, dtype=torch.int64, device=device)
    extended = torch.cat([up, torch.arange(nodes, nodes + count, device=device)])
    hop, hop_depth = extended.clone(), torch.cat([torch.ones(nodes, dtype=torch.int64, device=device),
                                                  torch.zeros(count, dtype=torch.int64, device=device)])
    for _ in range(max(1, nodes).bit_length() + 1):  # pointer jumping: depth = hops to the virtual root
        hop_depth = hop_depth + hop_depth[hop]
        hop = hop[hop]
    depth = hop_depth[:nodes]
    levels = int(depth.max())
    size = torch.ones(nodes + count, dtype=torch.int64, device=device)
    for level in range(levels, 1, -1):
        at = torch.nonzero(depth == level).flatten()
        size = size.index_add(0, up[at], size[at])
    # offsets among siblings: siblings sorted by descending key, exclusive sums of their sizes
    by_key = torch.argsort(key, descending=True, stable=True)
    by_parent = by_key[torch.argsort(up[by_key], stable=True)]
    sizes_sorted = size[by_parent]
    inclusive = torch.cumsum(sizes_sorted, 0)
    group_start = torch.searchsorted(up[by_parent], up[by_parent])  # first index of each parent group
    before = inclusive - sizes_sorted - (inclusive - sizes_sorted)[group_start]
    offset = torch.empty(nodes, dtype=torch.int64, device=device)
    offset[by_parent] = before
    preorder = torch.zeros(nodes + count, dtype=torch.int64, device=device)
    for level in range(1, levels + 1):
        at = torch.nonzero(depth == level).flatten()
        base = torch.where(up[at] >= nodes, 0, preorder[up[at]] + 1)
        preorder[at] = base + offset[at]
    return torch.argsort(image * (nodes + 1) + preorder[:nodes], stable=True)


def _walk(pixel: Tensor, occupancy: Tensor, border_id: Tensor, delta: Tensor, start_border: Tensor,
          first_dir: Tensor, order: Tensor) -> tuple[Tensor, Tensor]:
    """Lengths (in ``order``) and flat pixel indices of all contours: the cycles of the start states.

    Every state of a walk has its back neighbour ``b`` in the foreground (the previous pixel; at the start
    ``i1``), so only those *valid* states are built. On them the successor is injective (two valid ``b`` of
    a pixel with the same first foreground ``d`` after them would put one of them between the other and
    ``d``); a state whose step would leave the border pixels (an inner-side walk, never a contour's) is made
    a fixed point. So a contour's cycle has no state entering it from outside, and a state reaches a start
    only if it is on that start's cycle.
    """
    device = pixel.device
    valid = occupancy  # (M, 8): the valid states, back neighbour b in the foreground
    state_id = torch.cumsum(valid.view(-1), 0).view(valid.shape) - 1
    state_id = torch.where(valid, state_id, -1)
    owner, back = torch.nonzero(valid, as_tuple=True)
    states = owner.numel()
    code = (occupancy.long() * (1 << torch.arange(8, device=device))).sum(dim=1)
    direction = next_direction_table(device)[code[owner], back]
    successor_border = border_id[pixel[owner] + delta[direction]]
    succ = torch.where(successor_border >= 0, state_id[successor_border.clamp_min(0), direction ^ 4],
                       torch.arange(states, device=device))
    single = ~occupancy[start_border].any(dim=1)
    start_state = state_id[start_border, first_dir.clamp_min(0)]
    start_state = torch.where(single, 0, start_state)
    is_start = torch.zeros(states, dtype=torch.bool, device=device)
    is_start[start_state[~single]] = True
    # distance from every state to the first start ahead, by pointer jumping: a contour of L states is done
    # after ceil(log2 L) rounds, its start last (one host read per round, at most bit_length(states) + 1)
    target, distance, done = succ, torch.ones(states, dtype=torch.int64, device=device), is_start[succ]
    for _ in range(max(1, states).bit_length() + 1):
        if bool(done[start_state[~single]].all()):  # a start is done last on its cycle
            break
        pending = ~done
        distance = torch.where(pending, distance + distance[target], distance)
        done = torch.where(pending, done[target], done)
        target = torch.where(pending, target[target], target)
    contour_of_state = torch.full((states,), -1, dtype=torch.int64, device=device)
    contour_of_state[start_state[~single]] = torch.nonzero(~single).flatten()
    member = torch.nonzero(done).flatten()
    contour = contour_of_state[target[member]]
    member, contour = member[contour >= 0], contour[contour >= 0]
    lengths = torch.where(single, 1, distance[start_state] if states else torch.ones_like(start_state))
    lengths_sorted = lengths[order]
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel(), device=device)
    offsets = torch.cumsum(lengths_sorted, 0) - lengths_sorted
    position = (lengths[contour] - distance[member]) % lengths[contour]
    points = torch.empty(int(lengths_sorted.sum()) if lengths.numel() else 0, dtype=torch.int64, device=device)
    points[offsets[rank[contour]] + position] = pixel[owner[member]]
    singles = torch.nonzero(single).flatten()
    points[offsets[rank[singles]]] = pixel[start_border[singles]]
    return lengths_sorted, points
