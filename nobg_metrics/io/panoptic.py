"""Reading COCO panoptic data for ``nobg-metrics panoptic``: the JSON files, the PNGs (Pillow, ``rgb2id``), the
reference's sanity checks, and one image pair as a :class:`~nobg_metrics._panoptic_batch.SegmentBatch`.

Format (COCO panoptic, also what cityscapesScripts' ``createPanopticImgs.py`` writes): a JSON with ``annotations``
(``image_id``, ``file_name``, ``segments_info``: ``id``, ``category_id``, ``iscrowd``, ``area``) and, for the gt,
``categories`` (``id``, ``isthing``, ``name``); a folder of RGB PNGs whose pixel ``id = R + 256 G + 256² B``
(panopticapi ``rgb2id``) names the segment, 0 = void.

Checks, each an :class:`~nobg_metrics.io.errors.InputError` naming the image and the segment (panopticapi checks
the predictions; here both sides): a PNG segment missing from the JSON, a JSON segment missing from the PNG, an
unknown ``category_id``, a gt image without a prediction, gt and prediction PNGs of different sizes, a segment id
listed twice or listed as 0, a gt ``area`` that is not the segment's pixel count (panopticapi takes the gt area
from the JSON; with the check it is the pixel count either way).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from PIL import Image

from nobg_metrics._panoptic_batch import SegmentBatch
from nobg_metrics.io.errors import InputError


@dataclass(frozen=True)
class PanopticTask:
    """What every image is scored with (picklable: sent to the worker processes)."""

    gt_folder: Path
    pred_folder: Path
    category_ids: tuple[int, ...]
    isthing: tuple[bool, ...]
    names: tuple[str, ...]
    iou_type: Literal["segm", "boundary"]
    dilation_ratio: float
    collision: str

    @property
    def marker_id(self) -> int:
        """boundary-iou-api's ``BOUNDARY_ID = max category id + 1``."""
        return max(self.category_ids) + 1


def load_json(path: Path, what: str) -> dict[str, Any]:
    """A JSON object from ``path`` (errors name the file)."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{what} {path} does not exist") from None
    except (OSError, ValueError) as error:
        raise InputError(f"{what} {path} cannot be read as JSON ({error})") from None
    if not isinstance(document, dict) or not isinstance(document.get("annotations"), list):
        raise InputError(f"{what} {path} is not a COCO panoptic JSON (no 'annotations' list)")
    return document


def categories_of(gt: dict[str, Any], path: Path) -> tuple[tuple[int, ...], tuple[bool, ...], tuple[str, ...]]:
    """``(ids, isthing, names)`` of the gt JSON's ``categories``, in its order."""
    entries = gt.get("categories")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"gt JSON {path} has no 'categories' list")
    ids, things, names = [], [], []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), int) or "isthing" not in entry:
            raise InputError(f"gt JSON {path}: categories[{index}] needs an int 'id' and 'isthing', got {entry!r}")
        ids.append(int(entry["id"]))
        things.append(entry["isthing"] == 1)
        names.append(str(entry.get("name", entry["id"])))
    if len(set(ids)) != len(ids):
        raise InputError(f"gt JSON {path}: a category id is listed twice ({sorted(ids)})")
    return tuple(ids), tuple(things), tuple(names)


def matched_annotations(gt: dict[str, Any], pred: dict[str, Any]) -> list[tuple[dict, dict]]:
    """The (gt, prediction) annotation of every gt image, in the gt's order (panopticapi's matching)."""
    predictions = {}
    for entry in pred["annotations"]:
        if isinstance(entry, dict) and "image_id" in entry:
            predictions[entry["image_id"]] = entry
    pairs = []
    for entry in gt["annotations"]:
        if not isinstance(entry, dict) or "image_id" not in entry:
            raise InputError(f"a gt annotation has no 'image_id': {str(entry)[:80]}")
        if entry["image_id"] not in predictions:
            raise InputError(f"no prediction for the image with id: {entry['image_id']}")
        pairs.append((entry, predictions[entry["image_id"]]))
    return pairs


def read_ids(path: Path, side: str, image_id: object) -> torch.Tensor:
    """The :math:`(H, W)` int32 words of a panoptic PNG: the segment id (``rgb2id``) in the low 24 bits, the
    PNG's fourth byte (the padding of an RGB image, or its alpha) above it; :func:`segment_ids` drops it."""
    try:
        with Image.open(path) as png:
            if png.mode not in ("RGB", "RGBA"):
                raise InputError(f"{side} PNG {path} of image {image_id!r} is {png.mode}, not an RGB panoptic PNG")
            width, height = png.size
            raw = png.tobytes("raw", "RGBX" if png.mode == "RGB" else "RGBA")  # 4 bytes a pixel: R, G, B, pad
    except FileNotFoundError:
        raise InputError(f"{side} PNG {path} of image {image_id!r} does not exist") from None
    except OSError as error:
        raise InputError(f"{side} PNG {path} of image {image_id!r} cannot be decoded ({error})") from None
    if sys.byteorder == "little":  # R in the low byte: id = R + 256 G + 256^2 B below the pad byte
        with warnings.catch_warnings():  # a read-only buffer: the words are only ever read
            warnings.simplefilter("ignore", UserWarning)
            return torch.from_numpy(np.frombuffer(raw, np.int32).reshape(height, width))
    pixels = np.frombuffer(raw, np.uint8).reshape(height, width, 4).astype(np.int32)
    return torch.from_numpy(pixels[..., 0] + 256 * pixels[..., 1] + 65536 * pixels[..., 2])


def segment_ids(words: torch.Tensor) -> torch.Tensor:
    """The segment ids of :func:`read_ids`' words (the fourth byte masked off)."""
    return words & 0xFFFFFF


def _label(side: str, annotation: dict) -> str:
    return f"{side} image {annotation.get('file_name', '?')!r} (image_id {annotation.get('image_id')!r})"


def slot_map(ids: torch.Tensor, annotation: dict, side: str, category_index: dict[int, int], is_gt: bool,
             marker_id: int | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """One side of an image as slots: ``(slots (H, W), category index per slot (S,), crowd per slot (S,),
    marker slot or -1)``; slot ``k + 1`` is ``segments_info[k]``. Every sanity check of the module notes."""
    segments = annotation.get("segments_info")
    where = _label(side, annotation)
    if not isinstance(segments, list):
        raise InputError(f"{where}: no 'segments_info' list")
    seg_ids, categories, crowd = [0], [-1], [False]
    marker = -1
    for index, segment in enumerate(segments):
        if not isinstance(segment, dict) or not isinstance(segment.get("id"), int) or "category_id" not in segment:
            raise InputError(f"{where}: segments_info[{index}] needs an int 'id' and a 'category_id'")
        seg_id, category = int(segment["id"]), segment["category_id"]
        if seg_id == 0:
            raise InputError(f"{where}: segment id 0 is listed in segments_info, but 0 is void in the PNG")
        if category not in category_index:
            raise InputError(f"{where}: segment with ID {seg_id} has unknown category_id {category}")
        if seg_id == marker_id:
            marker = index + 1
        seg_ids.append(seg_id)
        categories.append(category_index[category])
        crowd.append(bool(is_gt and segment.get("iscrowd", 0) == 1))
    if len(set(seg_ids)) != len(seg_ids):
        twice = sorted({s for s in seg_ids if seg_ids.count(s) > 1})
        raise InputError(f"{where}: segment ids {twice} are listed twice in segments_info")
    slots = _lookup_slots(ids, seg_ids)
    if slots is None:
        flat = segment_ids(ids.reshape(-1))
        missing = sorted(set(flat[~torch.isin(flat, torch.tensor(seg_ids, dtype=torch.int32))].unique().tolist()))
        raise InputError(f"{where}: segment with ID {missing[0]} is presented in PNG and not presented in JSON"
                         + (f" (and {len(missing) - 1} more: {missing[1:6]})" if len(missing) > 1 else ""))
    return slots, torch.tensor(categories, dtype=torch.int64), torch.tensor(crowd), marker


_HASH_MULTIPLIERS = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1, 0xD3A2646D, 0xFD7046C5,
                     0xB55A4F09)
"""Odd 32-bit multipliers tried for the perfect hash of an image's segment ids (Knuth's and xxHash's primes)."""


def _perfect_hash(values: list[int]) -> tuple[int, int] | None:
    """``(multiplier, bits)``: ``value mod 2^bits`` (multiplier 1) or ``((value * multiplier) mod 2^32) >> (32 -
    bits)`` distinct over ``values`` (32-bit words), for the fewest bits up to 16; ``None`` if none is."""
    smallest = max(1, (len(values) - 1).bit_length())
    for bits in range(smallest, 17):  # the low bits first (one op a pixel), then the multiplicative hashes (three)
        if len({v & ((1 << bits) - 1) for v in values}) == len(values):
            return 1, bits
    for bits in range(smallest, 17):
        for multiplier in _HASH_MULTIPLIERS:
            if len({((v * multiplier) & 0xFFFFFFFF) >> (32 - bits) for v in values}) == len(values):
                return multiplier, bits
    return None


def _slot_dtype(count: int) -> torch.dtype:
    """The smallest integer dtype of ``count`` slots: uint8, int16 or int32 (narrow maps compare faster)."""
    return torch.uint8 if count <= 256 else torch.int16 if count <= 2**15 else torch.int32


def _as_int32(value: int) -> int:
    return value - (1 << 32) if value >= 1 << 31 else value


def _lookup_slots(words: torch.Tensor, seg_ids: list[int]) -> torch.Tensor | None:
    """Each pixel's slot (the index of its id in ``seg_ids``, :func:`_slot_dtype`), or ``None`` if an id is not
    listed.

    The words' fourth byte is taken from the first pixel; a perfect hash of the listed ids with it (a mask of
    the low bits, or a multiply and a shift; found on the host) indexes a table of slots and one of words, and
    the words read back must equal the pixels' (one ``torch.equal``), else the byte varies (an alpha channel:
    the ids alone are looked up) or a pixel's id is not listed. Ids that no 16-bit hash separates are searched.
    """
    flat = words.reshape(-1)
    pad = (int(flat[0]) >> 24) & 0xFF
    for high in ((pad,) if pad == 0 else (pad, 0)):
        pixels = flat if high == pad else segment_ids(flat)
        values = [_as_int32(seg_id | high << 24) for seg_id in seg_ids]
        slots = _slots_of(pixels, values)
        if slots is not None:
            return slots.view(words.shape)
    return None


def _slots_of(pixels: torch.Tensor, values: list[int]) -> torch.Tensor | None:
    """The slot of each of ``pixels`` (int32 words) among ``values``, or ``None`` if one is not there."""
    dtype = _slot_dtype(len(values))
    found = _perfect_hash([v & 0xFFFFFFFF for v in values])
    if found is None:
        ordered, order = torch.sort(torch.tensor(values, dtype=torch.int32))
        position = torch.searchsorted(ordered, pixels).clamp_(max=len(values) - 1)
        if not _equal(ordered.index_select(0, position), pixels):
            return None
        return order.index_select(0, position).to(dtype)
    multiplier, bits = found
    slot_list = [0] * (1 << bits)
    value_list = [values[0]] * (1 << bits)  # an empty bucket holds a listed value hashing elsewhere: never equal
    for slot, value in enumerate(values):
        entry = value & ((1 << bits) - 1) if multiplier == 1 else ((value * multiplier) & 0xFFFFFFFF) >> (32 - bits)
        slot_list[entry], value_list[entry] = slot, value
    slot_table = torch.tensor(slot_list, dtype=dtype)  # (Python lists: a tensor item write costs ~10 us)
    value_table = torch.tensor(value_list, dtype=torch.int32)
    if multiplier == 1:
        bucket = pixels & ((1 << bits) - 1)
    else:  # int32 products wrap mod 2^32; the arithmetic shift's sign bits are masked off
        bucket = pixels.mul(_as_int32(multiplier)).bitwise_right_shift_(32 - bits).bitwise_and_((1 << bits) - 1)
    if not _equal(value_table.index_select(0, bucket), pixels):
        return None
    return slot_table.index_select(0, bucket)


def _equal(first: torch.Tensor, second: torch.Tensor) -> bool:
    """``torch.equal`` of two contiguous int32 vectors, compared as int64 pairs when it can (about 3x faster)."""
    if first.numel() % 2 == 0 and first.is_contiguous() and second.is_contiguous() \
            and first.storage_offset() % 2 == 0 and second.storage_offset() % 2 == 0:
        return torch.equal(first.view(torch.int64), second.view(torch.int64))
    return torch.equal(first, second)


def check_areas(areas: list[int], annotation: dict, side: str, is_gt: bool) -> None:
    """A JSON segment missing from the PNG (area 0), and a gt ``area`` that is not the pixel count: errors.

    Args:
        areas: pixels of each slot (slot ``k + 1`` is ``segments_info[k]``).
        annotation: the image's annotation.
        side: ``"gt"`` or ``"pred"``.
        is_gt: whether to check the ``area`` fields.
    """
    segments = annotation["segments_info"]
    absent = [segment["id"] for k, segment in enumerate(segments) if areas[k + 1] == 0]
    where = _label(side, annotation)
    if absent:
        raise InputError(f"{where}: the following segment IDs {absent} are presented in JSON and not presented "
                         f"in PNG")
    if is_gt:
        for k, segment in enumerate(segments):
            area = segment.get("area")
            if area is not None and area != areas[k + 1]:
                raise InputError(f"{where}: segment with ID {segment['id']} has area {area} in the JSON but "
                                 f"{areas[k + 1]} pixels in the PNG")


def image_batch(gt_ann: dict, pred_ann: dict, task: PanopticTask) -> tuple[SegmentBatch, bool]:
    """One (gt, prediction) image read from its PNGs as a batch of one (see :func:`ids_batch`)."""
    gt_ids = read_ids(task.gt_folder / str(gt_ann.get("file_name")), "gt", gt_ann.get("image_id"))
    pred_ids = read_ids(task.pred_folder / str(pred_ann.get("file_name")), "pred", gt_ann.get("image_id"))
    return ids_batch(gt_ids, pred_ids, gt_ann, pred_ann, task)


def ids_batch(gt_ids: torch.Tensor, pred_ids: torch.Tensor, gt_ann: dict, pred_ann: dict, task: PanopticTask
              ) -> tuple[SegmentBatch, bool]:
    """One image of :math:`(H, W)` id maps and annotations as a batch of one, and whether it holds a segment
    whose id is the reference's marker (the slots carry the marker only under ``collision="reference"``)."""
    category_index = {c: k for k, c in enumerate(task.category_ids)}
    marker_id = task.marker_id if task.iou_type == "boundary" else None
    if gt_ids.shape != pred_ids.shape:
        raise InputError(f"image_id {gt_ann.get('image_id')!r}: the gt PNG {gt_ann.get('file_name')!r} is "
                         f"{gt_ids.shape[1]}x{gt_ids.shape[0]} but the prediction PNG {pred_ann.get('file_name')!r} "
                         f"is {pred_ids.shape[1]}x{pred_ids.shape[0]}")
    gt_slots, gt_category, gt_crowd, gt_marker = slot_map(gt_ids, gt_ann, "gt", category_index, True, marker_id)
    pred_slots, pred_category, _, pred_marker = slot_map(pred_ids, pred_ann, "pred", category_index, False, marker_id)
    collided = gt_marker >= 0 or pred_marker >= 0
    markers = {}
    if collided and task.collision == "reference":
        markers = {"gt_marker": torch.tensor([gt_marker]), "pred_marker": torch.tensor([pred_marker])}
    batch = SegmentBatch(gt_slots[None], pred_slots[None], gt_category[None], gt_crowd[None], pred_category[None],
                         **markers)
    return batch, collided


def check_folder(folder: Path, what: str) -> None:
    """The reference's folder check."""
    if not os.path.isdir(folder):
        raise InputError(f"Folder {folder} with {what} segmentations doesn't exist")
