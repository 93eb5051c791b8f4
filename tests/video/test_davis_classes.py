"""DavisJ / DavisF / DavisJAndF as states: any batching, lists or tensors, reset, pickle, clone, a state_dict taken
mid-way (names included), merge_state (this metric's frames first), forward, rejected batches, the per-sequence and
per-frame tables, no host sync in update, and real two-process DDP (an empty rank, a sequence split over ranks)."""

from __future__ import annotations

import functools
import pickle

import numpy as np
import pytest
import torch

import nobg_metrics as nm
from nobg_metrics import functional as F
from nobg_metrics.functional.video.davis_statistics import sequence_key
from nobg_metrics.ops import host_reads
from tests.helpers.ddp import check_ddp, run_ddp
from tests.helpers.syncs import HostSyncRecorder
from tests.helpers.tester import saved
from tests.reference import davis_port as port

NAMES = ("J-Mean", "J-Recall", "J-Decay", "F-Mean", "F-Recall", "F-Decay", "J&F-Mean")


def _video(seed: int, frames: int = 10, shape=(23, 31)):
    """One video's frames: a drifting blob and a prediction that lags behind and fades."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:shape[0], 0:shape[1]]
    gts, preds = [], []
    for t in range(frames):
        cy, cx = shape[0] / 2 + t * 0.7, shape[1] / 3 + t
        gts.append(torch.from_numpy(((yy - cy) / 7) ** 2 + ((xx - cx) / 9) ** 2 <= 1))
        lag = ((yy - cy + 1) / 7) ** 2 + ((xx - cx + t / 2) / (9 - t / 3)) ** 2 <= 1
        preds.append(torch.from_numpy(lag ^ (rng.random(shape) < 0.02)))
    return preds, gts


def _data():
    """Two sequences interleaved batch by batch: [(preds, gts, key)] in arrival order."""
    a, b = _video(0), _video(1, frames=7, shape=(19, 40))
    return [(a[0][i:i + 3], a[1][i:i + 3], "a") for i in range(0, 10, 3)] + \
        [(b[0][i:i + 2], b[1][i:i + 2], "b") for i in range(0, 7, 2)]


def _filled(make=nm.DavisJAndF, batches=None):
    metric = make()
    for preds, gts, key in batches or _data():
        metric.update(preds, gts, sequence=key)
    return metric


def _expected():
    """The port's per-object rows and global numbers on the same two sequences."""
    rows = {}
    for key, (preds, gts) in (("a", _video(0)), ("b", _video(1, frames=7, shape=(19, 40)))):
        j = np.array([port.region_similarity(g.numpy(), p.numpy()) for p, g in zip(preds, gts)])
        f = np.array([port.contour_accuracy(p.numpy(), g.numpy()) for p, g in zip(preds, gts)])
        rows[key] = (*port.sequence_statistics(j), *port.sequence_statistics(f))
    means = np.array(list(rows.values())).mean(axis=0)
    return rows, dict(zip(NAMES, [*means, (means[0] + means[3]) / 2]))


def _same(first, second):
    one, two = first.summary(), second.summary()
    for name in NAMES:
        assert abs(one[name].item() - two[name].item()) <= 1e-12, name


def test_values_equal_the_port_and_every_batching():
    rows, expected = _expected()
    metric = _filled()
    summary = metric.summary()
    for name in NAMES:
        assert abs(summary[name].item() - expected[name]) <= 1e-12, name
    assert metric.compute().item() == summary["J&F-Mean"].item()
    table = metric.per_sequence()
    assert table["sequence"] == sorted(["a", "b"], key=sequence_key)  # sequences in key order
    for row, name in enumerate(table["sequence"]):
        assert np.abs(np.array([table[k][row].item() for k in NAMES[:6]]) - rows[name]).max() <= 1e-12
    assert table["frames"].tolist() == [{"a": 10, "b": 7}[n] for n in table["sequence"]]
    single = nm.DavisJAndF()
    for preds, gts, key in _data():
        for p, g in zip(preds, gts):
            single.update(p, g, sequence=key)
    _same(single, metric)
    stacked = nm.DavisJAndF()
    for preds, gts, key in _data():
        stacked.update(torch.stack(preds)[:, None], torch.stack(gts)[:, None], sequence=[key] * len(preds))
    _same(stacked, metric)
    mixed = nm.DavisJAndF()  # both sequences in one update, as a list of mixed sizes
    data = _data()
    mixed.update([p for b in data for p in b[0]], [g for b in data for g in b[1]],
                 sequence=[b[2] for b in data for _ in b[0]])
    _same(mixed, metric)


@pytest.mark.parametrize("make", [nm.DavisJ, nm.DavisF, functools.partial(nm.DavisJ, statistic="decay"),
                                  functools.partial(nm.DavisF, statistic="recall")])
def test_single_measures_and_statistics(make):
    _, expected = _expected()
    metric = _filled(make)
    label = {"mean": "Mean", "recall": "Recall", "decay": "Decay"}[metric.statistic]
    assert abs(metric.compute().item() - expected[f"{metric._measures[0]}-{label}"]) <= 1e-12


def test_reset_pickle_clone_state_dict_and_merge():
    data = _data()
    whole = _filled(batches=data)
    first = _filled(batches=data[:3])
    for _name, restore in (("pickle", lambda m: pickle.loads(pickle.dumps(m))), ("clone", lambda m: m.clone())):
        resumed = restore(first)
        for preds, gts, key in data[3:]:
            resumed.update(preds, gts, sequence=key)
        _same(resumed, whole)
    loaded = nm.DavisJAndF()
    loaded.load_state_dict(saved(first))
    for preds, gts, key in data[3:]:
        loaded.update(preds, gts, sequence=key)
    _same(loaded, whole)
    assert loaded.per_sequence()["sequence"] == whole.per_sequence()["sequence"]  # names travel in the state_dict
    # sequence "a" is split between the two halves: the merged metric's frames come first, as they arrived
    split = _filled(batches=data[:2])
    split.merge_state(_filled(batches=data[2:]))
    _same(split, whole)
    assert sorted(split.per_sequence()["sequence"]) == ["a", "b"]
    whole.reset()
    with pytest.warns(UserWarning, match="before the ``update``"):
        assert whole.davis_j == [] and np.isnan(whole.compute().item())  # NaN: no frame


def test_load_state_dict_refuses_other_states():
    state = saved(_filled())
    state["davis_j"] = [torch.zeros(3, dtype=torch.float32)]
    with pytest.raises(ValueError, match="davis_j"):
        nm.DavisJAndF().load_state_dict(state)
    with pytest.raises(ValueError, match="other options"):
        nm.DavisF(bound_th=3).load_state_dict(saved(_filled(nm.DavisF)))


def test_forward_and_rejected_batches():
    data = _data()
    metric = nm.DavisJAndF()
    for preds, gts, key in data:
        value = metric(preds, gts, sequence=key)
        assert value.item() == F.davis_j_and_f(preds, gts, sequence=key).item()
    _same(metric, _filled(batches=data))
    before = {name: list(metric.__dict__[name]) for name in ("davis_j", "davis_f", "davis_sequence", "davis_frame")}
    names, count = dict(metric._sequence_names), metric._update_count
    bad = torch.zeros(1, 23, 32, dtype=torch.bool)
    for call in (metric.update, metric.forward):
        with pytest.raises(ValueError):
            call(bad, torch.zeros(1, 23, 31, dtype=torch.bool), sequence="new")
        with pytest.raises(ValueError):
            call(torch.zeros(2, 5, 5), torch.zeros(2, 5, 5), sequence=["only one"])
        assert metric._update_count == count and metric._sequence_names == names
        for name, value in before.items():
            assert len(metric.__dict__[name]) == len(value)
            assert all(torch.equal(x, y) for x, y in zip(metric.__dict__[name], value))


def test_per_frame_table_and_frame_keys():
    preds, gts = _video(2, frames=6)
    order = [4, 1, 5, 0, 3, 2]
    metric = nm.DavisJ()
    metric.update([preds[i] for i in order], [gts[i] for i in order], sequence=7, frame=order)
    table = metric.per_frame()
    assert table["sequence"] == [7] * 6 and table["frame"].tolist() == list(range(6))
    assert table["position"].tolist() == list(range(6))
    expected = [port.region_similarity(g.numpy(), p.numpy()) for p, g in zip(preds, gts)]
    assert np.abs(table["J"].numpy() - expected).max() <= 1e-12
    by_int = nm.DavisJ(statistic="decay")
    by_int.update(torch.stack(preds[:3]), torch.stack(gts[:3]), frame=0)
    by_int.update(torch.stack(preds[3:]), torch.stack(gts[3:]), frame=3)
    assert abs(by_int.compute().item() - port.sequence_statistics(np.array(expected))[2]) <= 1e-12


@pytest.mark.parametrize("as_list", [False, True], ids=["tensor", "list"])
def test_update_makes_no_host_sync(as_list, monkeypatch):
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    preds, gts = _video(3, frames=4)
    pred, gt = (preds, gts) if as_list else (torch.stack(preds), torch.stack(gts))
    metric = nm.DavisJAndF(validate_args=False)
    metric.update(pred, gt, gt, sequence="warm-up", frame=0)
    with HostSyncRecorder() as recorder:
        metric.update(pred, gt, gt, sequence="bike-packing_1", frame=4)
    assert not recorder.hits, recorder.hits


def _split_worker(rank, world_size, shares):
    metric = nm.DavisJAndF()
    for preds, gts, key, frames in shares[rank]:
        metric.update(preds, gts, sequence=key, frame=frames)
    return {name: value.item() for name, value in metric.summary().items()}


@pytest.mark.slow
def test_under_two_process_ddp():
    preds, gts = _video(4, frames=9)
    check_ddp(nm.DavisJAndF, list(zip(preds, gts)))  # one sequence in rank order; then rank 0 empty
    data = [(p, g, key, list(range(i, i + len(p)))) for (p, g, key), i in zip(_data(), [0, 3, 6, 9, 0, 2, 4, 6])]
    shares = [data[1::2], data[0::2]]  # every sequence split over both ranks, out of order: frame= restores it
    expected = _filled(batches=[d[:3] for d in data]).summary()
    for values in run_ddp(_split_worker, 2, shares):
        for name in NAMES:
            assert abs(values[name] - expected[name].item()) <= 1e-12, name
