"""One trimap check for every metric that takes a trimap (:func:`nobg_metrics._inputs.prepare`): the metrics that score
the unknown region (SAD, MSE, gradient, connectivity), the P3M protocol's (SAD-T, -FG, -BG, ...) and those that score
the whole image and ignore the trimap (P3M SAD / MSE / MAD over the image, P3M gradient and connectivity) reject the
same bad trimaps with the same message, and a rejected batch changes no state."""

from __future__ import annotations

import inspect
import re

import pytest
import torch

from nobg_metrics.catalog import descriptor
from nobg_metrics.collection import METRIC_NAMES, make_collection, metric_class

TRIMAP_NAMES = [name for name in METRIC_NAMES if "trimap" in inspect.signature(metric_class(name).update).parameters]


def _batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gt = torch.zeros(2, 1, 16, 20)
    gt[:, :, 4:12, 5:15] = 1.0
    pred = ((gt * 0.8 + 0.1).clamp(0, 1) * 255).round().to(torch.uint8)  # PNG bytes: every entry reads them
    trimap = torch.where(gt > 0, 255, 0).to(torch.uint8)
    gt = (gt * 255).to(torch.uint8)
    trimap[:, :, 3:13, 4:16] = torch.where(trimap[:, :, 3:13, 4:16] == 255, 255, 128)
    trimap[:, :, 6:10, 7:13] = 128
    return pred, gt, trimap


def _bad_trimaps() -> dict[str, tuple[torch.Tensor, type[Exception], str, bool]]:
    """name -> (trimap, error, message part, checked without ``validate_args`` too)."""
    _, _, trimap = _batch()
    level7 = trimap.clone()
    level7[0, 0, 0, 0] = 7
    nan = trimap.float() / 255
    nan[nan == 128 / 255] = 0.5
    nan[1, 0, 2, 3] = float("nan")
    off_level = trimap.float() / 255
    off_level[off_level == 128 / 255] = 0.5
    off_level[0, 0, 1, 1] = 0.3
    return {
        "level 7": (level7, ValueError, "values must be (0, 128, 255)", False),
        "NaN": (nan, ValueError, "must be finite; got NaN", False),
        "float level 0.3": (off_level, ValueError, "values must be (0.0, 0.5, 1.0)", False),
        "wrong shape": (trimap[..., :-1], ValueError, "must have the same shape", True),
        "bool": (trimap == 255, TypeError, ("`trimap` must be uint8 (0 background, 128 unknown, 255 foreground) or "
                                            "float (0, 0.5, 1); got dtype torch.bool (a trimap has three levels"),
                 True),
        "int32": (trimap.int(), TypeError, "got dtype torch.int32", True),
    }


def test_the_trimap_taking_metrics_are_all_there():
    assert {"sad", "mse_metric", "gradient_error", "connectivity_error", "p3m_sad", "p3m_sad_trimap",
            "p3m_gradient", "p3m_connectivity"} <= set(TRIMAP_NAMES)


@pytest.mark.parametrize("bad", list(_bad_trimaps()))
@pytest.mark.parametrize("name", TRIMAP_NAMES)
def test_every_trimap_taking_metric_rejects_a_bad_trimap_alike(name, bad):
    pred, gt, good = _batch()
    trimap, error, message, always = _bad_trimaps()[bad]
    metric = metric_class(name)(**_fixed(name))
    metric.update(pred, gt, good)
    before = {key: value.clone() for key, value in metric.metric_state.items()}
    with pytest.raises(error, match=re.escape(message)):
        metric.update(pred, gt, trimap)
    assert all(torch.equal(value, before[key]) for key, value in metric.metric_state.items())
    unchecked = metric_class(name)(**_fixed(name), validate_args=False)
    if always:
        with pytest.raises(error):
            unchecked.update(pred, gt, trimap)


def test_a_collection_of_every_trimap_taking_metric_names_the_list_element():
    pred, gt, trimap = _batch()
    collection = make_collection(metrics=TRIMAP_NAMES)
    bad = [trimap[0], trimap[1].clone()]
    bad[1][0, 0, 0] = 7
    with pytest.raises(ValueError, match=r"`trimap\[1\]` values must be"):
        collection.update(list(pred), list(gt), trimap=bad)
    collection.update(list(pred), list(gt), trimap=list(trimap))  # the good one goes through every member


def _fixed(name: str) -> dict:
    return dict(descriptor(name).arguments)
