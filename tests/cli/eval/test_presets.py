"""``--preset sod | dis | cod | hrsod | matting`` (docs/tables.md "Presets"): the metric sets and column orders of
PySODEvalToolkit, BiRefNet and the matting papers; explicit flags win; metrics this build lacks are left out."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import nobg_metrics.collection
from nobg_metrics.cli.core.names import PRESET_NAMES
from nobg_metrics.cli.eval.main import main
from nobg_metrics.cli.eval.presets import PRESETS, apply_preset
from nobg_metrics.cli.eval.protocols import BIREFNET_COLUMNS, DIM_METRICS
from nobg_metrics.cli.parser import build_parser
from tests.cli.folders import make_dataset, make_matting_dataset, read_results

FAST = ["--workers", "0", "--quiet", "--no-plots", "--procs", "1"]
TOOLKIT = {"sm": ["s_measure"], "wfm": ["weighted_f_measure"], "mae": ["mae"],  # PySODEvalToolkit's names
           "fmeasure": ["f_measure_max", "f_measure_mean", "f_measure_adaptive"],  # max, avg, adp
           "em": ["e_measure_max", "e_measure_mean", "e_measure_adaptive"]}


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["eval", *argv])


def _birefnet(task: str, drop: tuple[str, ...] = ()) -> list[str]:
    names = {"birefnet_hce": "hce", "birefnet_mba": "mba"}
    return [names.get(name, name) for field, name in BIREFNET_COLUMNS[task] if field not in drop]


def test_the_presets_follow_their_sources():
    assert tuple(PRESETS) == PRESET_NAMES
    toolkit = [name for key in ("sm", "wfm", "mae", "fmeasure", "em") for name in TOOLKIT[key]]
    assert list(PRESETS["sod"].metrics) == toolkit
    assert list(PRESETS["dis"].metrics) == _birefnet("DIS5K", ("mBA", "maxBIoU", "meanBIoU"))
    assert list(PRESETS["hrsod"].metrics) == _birefnet("HRSOD", ("HCE", "maxBIoU", "meanBIoU"))
    assert list(PRESETS["cod"].metrics[:3]) == ["s_measure", "weighted_f_measure", "mae"]
    assert PRESETS["matting"].metrics == DIM_METRICS
    known = set(nobg_metrics.collection.METRIC_NAMES) | {"hce"}
    for preset in PRESETS.values():
        assert set(preset.metrics) <= known and len(set(preset.metrics)) == len(preset.metrics)


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_a_preset_sets_task_protocol_and_metrics(name, monkeypatch):
    monkeypatch.setattr(nobg_metrics.collection, "METRIC_NAMES", (*nobg_metrics.collection.METRIC_NAMES, "hce"))
    args = _args("--preset", name)
    apply_preset(args)
    preset = PRESETS[name]
    assert (args.task, args.protocol, args.metrics) == (preset.task, preset.protocol, list(preset.metrics))
    again = argparse.Namespace(**vars(args))
    apply_preset(again)  # ranks apply it again: nothing changes
    assert vars(again) == vars(args)


def test_explicit_flags_win(capsys):
    args = _args("--preset", "sod", "--metrics", "mae", "s_measure")
    apply_preset(args)
    assert args.metrics == ["mae", "s_measure"] and (args.task, args.protocol) == ("sod", "pysodmetrics")
    args = _args("--preset", "sod", "--tier", "cheap")
    apply_preset(args)
    assert args.metrics is None and args.tier == "cheap"
    args = _args("--preset", "cod", "--protocol", "raw")
    apply_preset(args)
    assert args.protocol == "raw" and args.task is None and args.metrics == list(PRESETS["cod"].metrics)
    args = _args("--preset", "matting", "--protocol", "p3m")
    apply_preset(args)
    assert args.metrics is None and "--protocol p3m keeps its own metric set" in capsys.readouterr().err
    args = _args("--preset", "dis", "--protocol", "birefnet")  # BiRefNet's own HCE column, its DIS5K set
    apply_preset(args)
    assert args.metrics == ["f_measure_max", "weighted_f_measure", "mae", "s_measure", "e_measure_mean",
                            "birefnet_hce", "e_measure_max", "f_measure_mean", "e_measure_adaptive",
                            "f_measure_adaptive"]
    args = _args("--preset", "hrsod", "--protocol", "birefnet", "--task", "HRSOD")
    apply_preset(args)
    assert args.metrics[-1] == "birefnet_mba" and args.task == "HRSOD"


def test_a_metric_this_build_lacks_is_left_out_with_a_note(monkeypatch, capsys):
    monkeypatch.setattr(nobg_metrics.collection, "METRIC_NAMES",
                        tuple(n for n in nobg_metrics.collection.METRIC_NAMES if n != "hce"))
    args = _args("--preset", "dis")
    apply_preset(args)
    assert "hce" not in args.metrics and len(args.metrics) == len(PRESETS["dis"].metrics) - 1
    assert "this build has no hce metric: the dis preset's column is left out" in capsys.readouterr().err


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("presets")
    make_dataset(root / "DUTS-TE", count=4, formats=("u8", "rgba"))
    make_matting_dataset(root / "Composition-1k", count=3)
    return root


def test_preset_sod_end_to_end_columns_in_the_toolkits_order(folders, tmp_path):
    out = tmp_path / "sod"
    data = folders / "DUTS-TE"
    assert main(["eval", "--preset", "sod", "--gt", str(data / "gt"), "--pred", f"A={data / 'u8'}",
                 "--pred", f"B={data / 'rgba'}", "--out", str(out), *FAST]) == 0
    document = read_results(out)
    assert document["metrics"] == list(PRESETS["sod"].metrics) and document["protocol"] == "pysodmetrics"
    header = (out / "combined.md").read_text().splitlines()[2]
    assert header == ("| **method** | S_α ↑ | F^ω_β ↑ | MAE ↓ | F^max_β ↑ | F^m_β ↑ | F^adp_β ↑ | E^max_φ ↑ | "
                      "E^m_φ ↑ | E^adp_φ ↑ |")
    combined_tex = (out / "combined.tex").read_text()
    assert r"$S_\alpha$ $\uparrow$ & $F^\omega_\beta$ $\uparrow$ & MAE $\downarrow$" in combined_tex
    assert "SAD" not in (out / "table.md").read_text()  # a preset's SOD table holds no matting sum


def test_preset_matting_end_to_end(folders, tmp_path):
    out = tmp_path / "matting"
    data = folders / "Composition-1k"
    assert main(["eval", "--preset", "matting", "--gt", str(data / "alpha"), "--trimap", str(data / "trimaps"),
                 "--pred", str(data / "A"), "--pred", str(data / "B"), "--out", str(out), *FAST]) == 0
    document = read_results(out)
    assert (document["task"], document["protocol"], document["metrics"]) == ("matting", "dim", list(DIM_METRICS))
    assert "| **method** | SAD (÷1000) ↓ | MSE (×1000) ↓ | Grad (÷1000) ↓ | Conn (÷1000) ↓ |" in \
        (out / "combined.md").read_text()
