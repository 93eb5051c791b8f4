"""The ``"fixed"`` form of :func:`nobg_metrics.ops.contours.find_contours`: border following with no host sync, the
contours as a padded list whose every size comes from the frame (B, H, W) only, and whose every loop has a fixed
count.

The same procedure as the ``"data_sized"`` form in :mod:`nobg_metrics.ops.contours` (Suzuki & Abe 1985 as OpenCV
4.14 implements it; read that module first), with each data-sized step replaced:

- **Labels** (foreground 8-components, background 4-components of the padded frame): horizontal runs numbered
  by a running sum of run starts, their graph solved by the ``"fixed"`` form of
  :func:`~nobg_metrics.ops.union_find.union_find_roots` (fixed rounds). The edge lists hold one slot per
  (pixel, shift); a pixel that does not start an overlap gives the self-loop 0 → 0. A component is named by its
  smallest run id.
- **Nodes** live at fixed slots: the outer border of the component whose first pixel is ``p`` at ``p``, the
  border of the hole left of whose first pixel ``p`` lies at ``N + p`` (``N = B (H+2) (W+2)``), the virtual
  root of image ``b`` at ``2N + b``; slots without a border exist but are ignored.
- **Tree order** (preorder, siblings by descending start pixel): one sort of the ``2N + B`` slots by
  (parent, −start) gives first children and next siblings; the Euler tour of the forest is then a linked list
  (down(v) → down(first child) or up(v); up(v) → down(next sibling) or up(parent)), ranked by pointer jumping
  in ``bit_length(2(2N + B) + 1)`` rounds — a list of L elements is ranked in ⌈log2 L⌉. The preorder of v is
  the number of down-steps before down(v).
- **The walk**: all ``8N`` (pixel, back-direction) states; invalid ones are fixed points. Pointer jumping to
  the first start ahead runs ``bit_length(8 P) + 1`` rounds (``P = (H+2)(W+2)``): a contour is a cycle of
  distinct states of one image, so at most ``8P`` long.
- **The list**: every state on a contour gets the key (contour preorder, position in the contour); one sort
  of the ``8N`` keys puts the contour points first, in OpenCV's order, and the padding (key ∞) after them.
  A one-pixel component is a contour of one point; its (otherwise invalid) state ``(p, 0)`` stands for it.
- **The fields** of :class:`~nobg_metrics.ops.contour_steps.Contours`: a contour's index is a running count of
  contour changes along the list; a component's skimage label is the running count of component first pixels
  (raster order) at its first pixel, less those of the images before.

Host reads: none (every shape and round count is a function of (B, H, W); tested with the recorder of
``tests/helpers/syncs.py``). Cost: a few sorts and ~40 gathers over ``8N`` states — the price of not knowing
how many contour points there are.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from nobg_metrics.ops.contour_steps import DIRECTIONS, Contours, first_in_order, next_direction_table
from nobg_metrics.ops.union_find import union_find_roots


@functools.lru_cache(maxsize=16)
def _deltas(stride: int, device: torch.device) -> Tensor:
    """(8,) int64 flat offsets of OpenCV's directions in a padded frame of row ``stride`` (made once)."""
    return torch.tensor([dy * stride + dx for dy, dx in DIRECTIONS], dtype=torch.int64, device=device)


def _run_labels(fg: Tensor, connectivity: int) -> tuple[Tensor, Tensor, Tensor]:
    """Sync-free labels of a (B, H, W) mask: ``(root run id per pixel (0 off the mask), run starts (bool),
    run id per pixel)``, all flat. The root is the component's smallest run id, whose first pixel is the
    component's raster-first pixel."""
    b, h, w = fg.shape
    starts = fg.clone()
    starts[..., 1:] &= ~fg[..., :-1]
    flat_starts = starts.view(-1)
    run_id = torch.where(fg.view(-1), torch.cumsum(flat_starts, 0), 0)
    nodes = b * h * ((w + 1) // 2) + 1  # a row of w pixels has at most ceil(w / 2) runs; node 0: background
    tails, heads = [], []
    for shift in (0,) if connectivity == 4 else (-1, 0, 1):
        if h < 2 or abs(shift) >= w:
            continue
        left, right = max(0, -shift), w - max(0, shift)
        both = fg[:, :-1, left:right] & fg[:, 1:, left + shift:right + shift]
        first = both.clone()
        first[..., 1:] &= ~both[..., :-1]  # the first column of each overlap: one edge per pair of runs
        grid = torch.arange(b * h * w, device=fg.device).view(b, h, w)[:, :-1, left:right]
        tails.append(torch.where(first, run_id[grid], 0).reshape(-1))
        heads.append(torch.where(first, run_id[grid + w + shift], 0).reshape(-1))
    if not tails:
        return run_id, flat_starts, run_id
    parent = union_find_roots(nodes, torch.cat(tails), torch.cat(heads), engine="fixed", first_chains=h)
    return parent[run_id], flat_starts, run_id


def _tree_preorder(parent: Tensor, key: Tensor, attached: Tensor, virtual: Tensor) -> Tensor:
    """Per node slot, the number of down-steps of its image's Euler tour before it (its preorder + 1 from
    the virtual root). ``parent``: slot or ``M`` (none); siblings ordered by descending ``key``."""
    nodes = parent.numel()
    device = parent.device
    span = nodes + 1
    by_sibling = torch.argsort(parent * span + (nodes - key))
    sorted_parent = parent[by_sibling]
    same_next = torch.zeros(nodes, dtype=torch.bool, device=device)
    same_next[:-1] = sorted_parent[:-1] == sorted_parent[1:]
    next_sibling = torch.full((nodes,), -1, dtype=torch.int64, device=device)
    following = torch.cat([by_sibling[1:], by_sibling[:1]])
    next_sibling[by_sibling] = torch.where(same_next, following, -1)
    group_start = torch.ones(nodes, dtype=torch.bool, device=device)
    group_start[1:] = sorted_parent[1:] != sorted_parent[:-1]
    first_child = torch.full((nodes + 1,), -1, dtype=torch.int64, device=device)
    first_child = first_child.scatter(0, torch.where(group_start & (sorted_parent < nodes), sorted_parent, nodes),
                                      by_sibling)[:nodes]
    slots = torch.arange(nodes, device=device)
    end = 2 * nodes  # the tour's terminal element
    down_next = torch.where(first_child >= 0, first_child, nodes + slots)
    up_next = torch.where(next_sibling >= 0, next_sibling, nodes + parent.clamp(max=nodes - 1))
    up_next = torch.where(attached, up_next, end)  # virtual roots and unused slots end the tour
    successor = torch.cat([down_next, up_next, torch.full((1,), end, device=device)])
    weight = torch.cat([torch.ones(nodes, dtype=torch.int64, device=device),
                        torch.zeros(nodes + 1, dtype=torch.int64, device=device)])
    for _ in range((2 * nodes + 1).bit_length()):  # list ranking: suffix sums of the down-steps
        weight = weight + weight[successor]
        successor = successor[successor]
    return weight[:nodes]  # down-steps from down(v) to the end: descending in preorder


def trace_fixed(mask: Tensor) -> Contours:
    """The contours of ``cv2.findContours(mask, RETR_TREE, CHAIN_APPROX_NONE)`` per image, with no host read: the
    ``"fixed"`` form of :func:`~nobg_metrics.ops.contours.find_contours` (call that).

    Args:
        mask: :math:`(B, H, W)` bool.

    Returns:
        :class:`~nobg_metrics.ops.contour_steps.Contours` with ``S = 8 B (H+2) (W+2)`` entries.

    Examples:
        >>> ring = torch.ones(1, 4, 4, dtype=torch.bool); ring[0, 1:3, 1:3] = False
        >>> found = trace_fixed(ring)
        >>> int(found.real.sum()), found.points[:4].tolist(), found.contour[[0, 19, 20]].tolist()
        (20, [[0, 0], [0, 1], [0, 2], [0, 3]], [0, 1, -1])
    """
    count, height, width = mask.shape
    device = mask.device
    stride, plane = width + 2, (height + 2) * (width + 2)
    padded = torch.zeros((count, height + 2, width + 2), dtype=torch.bool, device=device)
    padded[:, 1:-1, 1:-1] = mask
    flat = padded.view(-1)
    n = flat.numel()
    shifts = [dy * stride + dx for dy, dx in DIRECTIONS]
    delta = _deltas(stride, device)
    fg_root, fg_starts, fg_run = _run_labels(padded, 8)
    bg_root, bg_starts, bg_run = _run_labels(~padded, 4)
    pixels = torch.arange(n, device=device)
    image_of_pixel = torch.div(pixels, plane, rounding_mode="floor")

    # nodes: outer borders at their component's first pixel, holes left of their first pixel
    outer = fg_starts & (fg_root == fg_run) & flat
    outside = bg_root[torch.arange(count, device=device) * plane]  # the padding's component per image
    hole_first = bg_starts & (bg_root == bg_run) & ~flat & (bg_root != outside[image_of_pixel])
    hole = torch.cat([hole_first[1:], hole_first[:1] & False])
    bg_first_pixel = torch.zeros(int(count * (height + 2) * ((width + 3) // 2) + 1), dtype=torch.int64,
                                 device=device).scatter(0, torch.where(bg_starts & (bg_root == bg_run), bg_run, 0),
                                                        pixels)
    fg_first_pixel = torch.zeros(int(count * (height + 2) * ((width + 3) // 2) + 1), dtype=torch.int64,
                                 device=device).scatter(0, torch.where(outer, fg_run, 0), pixels)
    virtual_slot = 2 * n + torch.arange(count, device=device)
    nodes = 2 * n + count
    left = (pixels - 1).clamp(min=0)
    surrounding = bg_root[left]
    outer_parent = torch.where(surrounding == outside[image_of_pixel], virtual_slot[image_of_pixel],
                               n + bg_first_pixel[surrounding] - 1)
    hole_parent = fg_first_pixel[fg_root]
    exists = torch.cat([outer, hole, torch.ones(count, dtype=torch.bool, device=device)])
    virtual = torch.cat([torch.zeros(2 * n, dtype=torch.bool, device=device),
                         torch.ones(count, dtype=torch.bool, device=device)])
    parent = torch.where(exists & ~virtual, torch.cat([outer_parent, hole_parent, virtual_slot]), nodes)
    key = torch.cat([pixels, pixels, torch.zeros(count, dtype=torch.int64, device=device)])
    down_steps = _tree_preorder(parent, key, exists & ~virtual, virtual)
    node_image = torch.cat([image_of_pixel, image_of_pixel, torch.arange(count, device=device)])
    order_key = node_image * (2 * nodes + 2) + (2 * nodes + 1 - down_steps)  # ascending = list order

    # the walk on (pixel, back direction) states
    occupancy = torch.stack([torch.roll(flat, -shift) for shift in shifts], dim=1) & flat.unsqueeze(1)  # (N, 8)
    code = (occupancy.long() << torch.arange(8, device=device)).sum(dim=1)
    border = flat & (code != 255)
    valid = border.unsqueeze(1) & occupancy
    direction = next_direction_table(device)[code]  # (N, 8): next direction for each back direction
    successor_pixel = (pixels.unsqueeze(1) + delta[direction.clamp(min=0)]).clamp(0, n - 1)
    states = torch.arange(8 * n, device=device).view(n, 8)
    succ = torch.where(valid & border[successor_pixel], successor_pixel * 8 + (direction ^ 4), states).view(-1)
    single = outer & ~occupancy.any(dim=1)
    outer_state = pixels * 8 + first_in_order(occupancy, (3, 2, 1, 0, 7, 6, 5)).clamp(min=0)
    hole_state = pixels * 8 + first_in_order(occupancy, (7, 6, 5, 4, 3, 2, 1)).clamp(min=0)
    walks = torch.cat([outer & ~single, hole])
    start_state = torch.where(walks, torch.cat([outer_state, hole_state]), 8 * n)
    node_of_start = torch.full((8 * n + 1,), -1, dtype=torch.int64, device=device)
    node_of_start = node_of_start.scatter(0, start_state, torch.arange(2 * n, device=device))
    is_start = node_of_start[:-1] >= 0
    small = 8 * n < 2**31 - 1  # int32 ids and distances: half the bytes per gather
    ids = torch.int32 if small else torch.int64
    cap = 8 * plane + 1  # distances beyond a contour's longest length are never used: clamp, no overflow
    target, distance, done = succ.to(ids), torch.ones(8 * n, dtype=ids, device=device), is_start[succ]
    for _ in range((8 * plane).bit_length() + 1):  # a contour has at most 8 P states
        pending = ~done
        distance = torch.where(pending, (distance + distance.index_select(0, target)).clamp_(max=cap), distance)
        done = torch.where(pending, done.index_select(0, target), done)
        target = torch.where(pending, target.index_select(0, target), target)
    target, distance = target.long(), distance.long()
    node_of_state = torch.where(done, node_of_start[target], -1)
    length = torch.ones(2 * n + 1, dtype=torch.int64, device=device).scatter(
        0, torch.where(walks, torch.arange(2 * n, device=device), 2 * n), distance[start_state.clamp(max=8 * n - 1)])
    state_length = length[node_of_state.clamp(min=0)]
    position = (state_length - distance) % state_length
    single_state = torch.zeros(n, 8, dtype=torch.bool, device=device)
    single_state[:, 0] = single
    single_state = single_state.view(-1)
    node_of_state = torch.where(single_state, torch.div(states.view(-1), 8, rounding_mode="floor"), node_of_state)
    position = torch.where(single_state, 0, position)
    member = node_of_state >= 0
    infinity = torch.iinfo(torch.int64).max
    list_key = torch.where(member, order_key[node_of_state.clamp(min=0)] * (8 * plane + 1) + position, infinity)
    order = torch.argsort(list_key)
    real = member[order]
    pixel = torch.where(real, torch.div(order, 8, rounding_mode="floor"), 0)
    within = pixel % plane
    node = node_of_state[order]
    changes = real & torch.cat([real.new_ones(1), node[1:] != node[:-1]])  # distinct contours have distinct nodes
    components = outer.view(count, plane).sum(dim=1)
    # skimage's labels: the components' first pixels counted in raster order, less those of the images before
    first_rank = (torch.cumsum(outer, 0).view(count, plane) - (torch.cumsum(components, 0) - components)[:, None])
    first_rank = first_rank.view(-1)
    label = first_rank.index_select(0, fg_first_pixel.index_select(0, fg_root))
    return Contours(
        points=torch.stack([torch.where(real, within % stride - 1, 0),
                            torch.where(real, torch.div(within, stride, rounding_mode="floor") - 1, 0)], dim=1),
        real=real,
        image=torch.where(real, image_of_pixel[pixel], count),
        contour=torch.where(real, torch.cumsum(changes, 0) - 1, -1),
        hole=real & (node >= n),
        component=torch.where(real, label[pixel], 0),
        components=components,
    )
