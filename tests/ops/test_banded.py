"""Banded-matrix correlations equal the plain shifted sums, for every tile position, batch and padding."""

from __future__ import annotations

import pytest
import torch

from nobg_metrics.ops import banded


def shifted_sum(image: torch.Tensor, taps: list[float], dim: int) -> torch.Tensor:
    """'valid' correlation ``sum_k taps[k] * x[.. + k]`` along ``dim``, term by term."""
    length = image.shape[dim] - len(taps) + 1
    return sum(tap * image.narrow(dim, shift, length) for shift, tap in enumerate(taps))


@pytest.mark.parametrize("shape", [(1, 9, 9), (2, 17, 40), (3, 33, 16), (1, 1, 25), (2, 64, 1), (1, 100, 70)])
@pytest.mark.parametrize("count", [1, 3, 7, 9, 17])
def test_rows_then_columns_equal_shifted_sums(shape, count):
    """Tiles cut rows and columns at every position (sizes below, at and across TILE); 1 to TILE + 1 taps."""
    generator = torch.Generator().manual_seed(count * 1000 + sum(shape))
    batch, rows, cols = shape
    image = torch.rand((batch, rows + count - 1, cols + count - 1), dtype=torch.float64, generator=generator)
    row_taps = torch.randn(count, dtype=torch.float64, generator=generator).tolist()
    col_taps = torch.randn(count, dtype=torch.float64, generator=generator).tolist()
    rows_only = banded.correlate_rows(banded.tiled(image), row_taps)
    expected_rows = shifted_sum(image, row_taps, -1)
    torch.testing.assert_close(rows_only.valid(), expected_rows, rtol=1e-14, atol=1e-14)
    both = banded.correlate_columns(rows_only, col_taps).valid()
    assert both.shape == shape
    torch.testing.assert_close(both, shifted_sum(expected_rows, col_taps, -2), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("shape", [(1, 5, 7), (2, 20, 3), (1, 16, 16)])
def test_zero_padding_gives_same_size_filters(shape):
    """``tiled(image, pad=h)`` then 2h + 1 taps per axis is a zero-padded 'same' filter."""
    image = torch.rand(shape, dtype=torch.float64)
    taps = [0.1, 0.2, 0.4, 0.2, 0.1]
    out = banded.correlate_columns(banded.correlate_rows(banded.tiled(image, pad=2), taps), taps).valid()
    padded = torch.nn.functional.pad(image, (2, 2, 2, 2))
    expected = shifted_sum(shifted_sum(padded, taps, -1), taps, -2)
    assert out.shape == shape
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-15)


def test_slots_beyond_the_map_never_reach_valid_outputs():
    """Every slot outside the map is finite (a product multiplies it by the band's zeros), so a reused buffer
    full of NaN and inf beyond the map cannot leak into the result."""
    image = torch.rand((2, 11, 13), dtype=torch.float64)
    layout = banded.empty_tiled(2, 11, 13, image)
    layout.buffer.fill_(float("nan"))
    layout = banded.empty_tiled(2, 11, 13, image)  # a fresh layout zeroes its margins itself
    layout.valid().copy_(image)
    outside = torch.ones_like(layout.buffer, dtype=torch.bool)
    rows = layout.rows
    outside[: 2 * rows].view(2, rows, -1)[:, :11, :13] = False
    assert torch.isfinite(layout.buffer[outside]).all()
    out = banded.correlate_columns(banded.correlate_rows(layout, [1.0, -1.0, 2.0]), [0.5, 0.5]).valid()
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, shifted_sum(shifted_sum(image, [1.0, -1.0, 2.0], -1), [0.5, 0.5], -2))


def test_too_many_taps_are_rejected():
    image = torch.rand((1, 40, 40), dtype=torch.float64)
    with pytest.raises(ValueError, match="taps"):
        banded.correlate_rows(banded.tiled(image), [1.0] * (banded.TILE + 2))


def test_a_layout_in_a_view_of_a_larger_buffer():
    """The windows are views with absolute storage offsets: a layout that does not start its storage works."""
    image = torch.rand((1, 20, 30), dtype=torch.float64)
    layout = banded.tiled(image)
    storage = torch.zeros(layout.buffer.numel() + 7, dtype=torch.float64)
    shifted = storage[7:].view(layout.buffer.shape).copy_(layout.buffer)
    moved = banded.Tiled(shifted, layout.batch, layout.height, layout.width)
    taps = [0.25, 0.5, 0.25]
    out = banded.correlate_columns(banded.correlate_rows(moved, taps), taps).valid()
    torch.testing.assert_close(out, shifted_sum(shifted_sum(image, taps, -1), taps, -2), rtol=1e-14, atol=1e-14)
    columns_only = banded.correlate_columns(moved, taps).valid()
    torch.testing.assert_close(columns_only, shifted_sum(image, taps, -2), rtol=1e-14, atol=1e-14)


# strips: bounded working buffers on any aspect ratio, the same values -------------------------------------------


@pytest.mark.parametrize("shape", [(1, 150_000), (150_000, 1), (3, 70_001)])
def test_thin_images_are_filtered_in_strips_with_the_same_values(shape, monkeypatch):
    import nobg_metrics as nm
    from nobg_metrics.ops import banded

    generator = torch.Generator().manual_seed(7)
    pred = torch.randint(0, 256, (1, 1, *shape), dtype=torch.uint8, generator=generator)
    gt = (torch.rand((1, 1, *shape), generator=generator) > 0.7).to(torch.uint8) * 255
    assert len(banded.strips(slice(0, shape[0]), slice(0, shape[1]), 1, 4)) > 1
    stripped = (nm.functional.gradient_error(pred, gt), nm.functional.weighted_f_measure(pred, gt))
    monkeypatch.setattr(banded, "STRIP_BOUNDS", (1 << 40, 1 << 40))  # one strip: the layout of the whole map
    assert len(banded.strips(slice(0, shape[0]), slice(0, shape[1]), 1, 4)) == 1
    whole = (nm.functional.gradient_error(pred, gt), nm.functional.weighted_f_measure(pred, gt))
    for ours, reference in zip(stripped, whole):
        assert torch.allclose(ours, reference, rtol=1e-12, atol=0), (ours, reference)
