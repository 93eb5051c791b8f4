"""LVIS mask AP and Boundary AP against boundary-iou-api's lvis_instance_api (port) and the installed lvis 0.5.3."""

from __future__ import annotations

import numpy as np
import pytest

from tests.instance.helpers import add_lvis_lists, assert_lvis_equal, images, lvis_case

pytest.importorskip("lvis")  # lvis 0.5.3, installed with --no-deps (it requires the non-headless opencv-python)

SIZES = [(45, 60), (105, 140), (37, 53)]


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
@pytest.mark.parametrize("federated", [True, False])
def test_matches_boundary_iou_api_port(iou_type, federated):
    data = images(7, SIZES, seed=30, categories=6)
    frequencies = add_lvis_lists(data, 6, seed=1, federated=federated)
    ours, ev = lvis_case(data, iou_type, frequencies, categories=6)
    assert_lvis_equal(ours, ev)


def test_segm_matches_installed_lvis():
    """lvis 0.5.3 has no crowd gts and keeps the upper area bound inclusive: no crowd, no area on a bound."""
    data = images(7, SIZES, seed=31, categories=6, crowd_rate=0.0)
    for image in data:
        areas = image.gt_masks.reshape(len(image.gt_masks), -1).sum(1)
        assert not np.isin(areas, [32**2, 96**2]).any()
    frequencies = add_lvis_lists(data, 6, seed=2)
    ours, ev = lvis_case(data, "segm", frequencies, evaluator="lvis", categories=6)
    assert_lvis_equal(ours, ev)


def test_zero_areas_are_dropped_and_ignore_flags():
    """Gts whose given area is 0 and empty detections leave the evaluation (``get_ann_ids``: area > 0)."""
    data = images(6, SIZES, seed=32, categories=5)
    for _index, image in enumerate(data):
        areas = image.gt_masks.reshape(len(image.gt_masks), -1).sum(1).astype(np.float64)
        areas[:: 3] = 0.0
        image.extra["area"] = areas
        image.extra["ignore"] = np.arange(len(areas)) % 4 == 1
        if len(image.dt_masks):
            image.dt_masks[0] = False
    frequencies = add_lvis_lists(data, 5, seed=3)
    ours, ev = lvis_case(data, "boundary", frequencies)
    assert_lvis_equal(ours, ev)


def test_per_image_cap_and_custom_cap():
    """More detections than the cap (LVISResults keeps the best ``max_dets`` per image, over all categories)."""
    data = images(3, [(45, 60)], seed=33, categories=4, detections=40)
    frequencies = add_lvis_lists(data, 4, seed=4)
    ours, ev = lvis_case(data, "segm", frequencies, categories=4, max_detection_thresholds=[17])
    assert_lvis_equal(ours, ev)
