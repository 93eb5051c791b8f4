"""The tables of ``nobg-metrics eval`` (docs/tables.md): the combined table (datasets as column groups, methods as
rows, ``--transpose``), top-1/2/3 marks, the subset mark, aliases, ``--digits``, XLSX and CSV, paper metric names,
and the matting measures of a SOD run printed apart."""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from nobg_metrics.cli.eval.config import ConfigError
from nobg_metrics.cli.eval.main import EXIT_USAGE, main
from nobg_metrics.cli.outputs.aliases import Aliases, check_aliases, read_aliases
from nobg_metrics.cli.outputs.results import latex_table, markdown_table
from nobg_metrics.cli.outputs.tables import (
    combined_latex,
    combined_markdown,
    combined_tables,
    full_counts,
    ranks,
    table_writers,
    xlsx_sheets,
)
from nobg_metrics.cli.outputs.xlsx import write_xlsx
from tests.cli.folders import make_dataset, read_results

FAST = ["--workers", "0", "--quiet", "--no-plots", "--procs", "1"]
HIGHER = {"mae": False, "s_measure": True, "sad": False, "iou_metric": True}


def _document(values: dict[tuple[str, str], dict[str, float]], images: dict[tuple[str, str], int] | None = None,
              missing: int = 0, task: str = "sod") -> dict:
    """A results.json document of (dataset, method) -> metric values."""
    metrics = list(next(iter(values.values())))
    results = [{"dataset": d, "method": m, "images": (images or {}).get((d, m), 12), "resized": 0, "metrics": v}
               for (d, m), v in values.items()]
    lost = [{"dataset": d, "method": m, "file": f"x{i}.*", "reason": "missing"}
            for (d, m), n in (images or {}).items() for i in range(12 - n)][:missing or None]
    return {"protocol": "pysodmetrics", "task": task, "metrics": metrics, "printed": {},
            "higher_is_better": {n: HIGHER.get(n) for n in metrics}, "results": results, "missing": lost,
            "unreadable": []}


FOUR = _document({("DUTS-TE", m): {"mae": mae, "s_measure": s}
                  for m, mae, s in (("A", 0.04, 0.90), ("B", 0.05, 0.88), ("C", 0.03, 0.85), ("D", 0.06, 0.80))}
                 | {("ECSSD", m): {"mae": 0.03, "s_measure": 0.9} for m in "AB"},
                 images={("ECSSD", "A"): 11, ("ECSSD", "B"): 12})


def test_ranks_are_dense_over_printed_values_and_mark_the_top_three():
    """The top three distinct values are marked, the worst too when it is one of them; ties share a
    rank."""
    assert ranks([0.9, 0.8, 0.9, 0.7, None, 0.6], True) == [1, 2, 1, 3, 0, 0]
    assert ranks([0.04, 0.05, 0.03, 0.06], False) == [2, 3, 1, 0]
    assert ranks([0.9, 0.8, 0.7], True) == [1, 2, 3] and ranks([0.1, 0.2], False) == [1, 2]
    assert ranks([0.5, 0.5], True) == [1, 1]
    assert ranks([0.1, 0.2, 0.3], None) == [0, 0, 0] and ranks([0.1, None], True) == [0, 0]


def test_combined_markdown_groups_datasets_marks_the_top_three_and_the_subset_rows():
    text = combined_markdown(combined_tables(FOUR, None, Aliases()), Aliases())
    lines = text.splitlines()
    assert lines[0] == "| | DUTS-TE |  | ECSSD |  |"
    assert lines[2] == "| **method** | MAE ↓ | S_α ↑ | MAE ↓ | S_α ↑ |"
    rows = {line.split(" | ")[0][2:]: line for line in lines[3:7]}
    # MAE: lower is better (C 0.03 first, A second, B third, D last unmarked); S: A, B, C
    assert rows["A"] == "| A | <ins>0.040</ins> | **0.900** | **0.030**† | **0.900** |"  # ECSSD: a tie, both best
    assert rows["B"] == "| B | *0.050* | <ins>0.880</ins> | **0.030** | **0.900** |"
    assert rows["C"] == "| C | **0.030** | *0.850* | - | - |"
    assert rows["D"] == "| D | 0.060 | 0.800 | - | - |"
    assert "† A on ECSSD: scored on 11 of 12 images" in text
    assert "iou_metric" not in text and "s_measure" not in text


def test_full_count_is_the_largest_scored_plus_lost_over_methods():
    assert full_counts(FOUR) == {"DUTS-TE": 12, "ECSSD": 12}
    alone = _document({("D", "A"): {"mae": 0.1}, ("D", "B"): {"mae": 0.2}}, images={("D", "A"): 10, ("D", "B"): 10},
                      missing=1)  # A lost one file, B two: the gt count is 11 as far as results.json says
    assert full_counts(alone) == {"D": 11}


def test_combined_latex_paper_names_marks_and_transpose():
    tex = combined_latex(combined_tables(FOUR, None, Aliases()), Aliases())
    assert r"\providecommand{\first}[1]{\textbf{#1}}" in tex and r"\providecommand{\second}[1]{\underline{#1}}" in tex
    assert r"& \multicolumn{2}{c}{DUTS-TE} & \multicolumn{2}{c}{ECSSD} \\" in tex
    assert r"\cmidrule(lr){2-3} \cmidrule(lr){4-5}" in tex
    assert r"Method & MAE $\downarrow$ & $S_\alpha$ $\uparrow$ & MAE $\downarrow$ & $S_\alpha$ $\uparrow$ \\" in tex
    assert r"C & \first{0.030} & \third{0.850} & - & - \\" in tex
    assert r"A & \second{0.040} & \first{0.900} & \first{0.030}$^\dagger$ & \first{0.900} \\" in tex
    assert r"$^\dagger$ A on ECSSD: scored on 11 of 12 images" in tex and r"\_" not in tex
    transposed = combined_latex(combined_tables(FOUR, None, Aliases()), Aliases(), transpose=True)
    assert r"Dataset & Metric & A & B & C & D \\" in transposed
    assert r"DUTS-TE & MAE $\downarrow$ & \second{0.040} & \third{0.050} & \first{0.030} & 0.060 \\" in transposed
    assert r" & $S_\alpha$ $\uparrow$ & \first{0.900} & \second{0.880} & \third{0.850} & 0.800 \\" in transposed
    for text, columns in ((tex, 5), (transposed, 6)):  # well formed: balanced braces, full rows
        assert text.count("{") == text.count("}")
        body = text[text.index(r"\toprule"):text.index(r"\bottomrule")]
        rows = [line for line in body.splitlines() if line.endswith(r"\\") and "multicolumn" not in line]
        assert rows and all(line.count("&") == columns - 1 for line in rows)
    md = combined_markdown(combined_tables(FOUR, None, Aliases()), Aliases(), transpose=True)
    assert "| dataset | metric | A | B | C | D |" in md and "| ECSSD | MAE ↓ | **0.030**† | **0.030** | - | - |" in md


def test_digits_and_aliases_order_and_rename(tmp_path):
    path = tmp_path / "aliases.yaml"
    path.write_text("datasets: {ECSSD: 'ECSSD$_{1k}$'}\nmethods: [D, C]\n", encoding="utf-8")
    aliases = read_aliases(path)
    check_aliases(aliases, ["DUTS-TE", "ECSSD"], list("ABCD"))
    md = combined_markdown(combined_tables(FOUR, 4, aliases), aliases)
    lines = md.splitlines()
    assert lines[0] == "| | ECSSD$_{1k}$ |  | DUTS-TE |  |"
    assert [line.split(" | ")[0][2:] for line in lines[3:7]] == ["D", "C", "A", "B"]
    assert "| C | - | - | **0.0300** | *0.8500* |" in md
    tex = combined_latex(combined_tables(FOUR, None, aliases), aliases)
    assert r"\multicolumn{2}{c}{ECSSD$_{1k}$}" in tex  # aliases are LaTeX as written
    per_dataset = markdown_table(FOUR, digits=2, aliases=aliases)
    assert per_dataset.index("### ECSSD$_{1k}$") < per_dataset.index("### DUTS-TE")
    assert "| D | 12 | 0.06 | 0.80 |" in per_dataset
    as_json = tmp_path / "aliases.json"
    as_json.write_text(json.dumps({"methods": {"A": "Ours", "B": None}}), encoding="utf-8")
    assert read_aliases(as_json).methods == {"A": "Ours", "B": None}


@pytest.mark.parametrize("text, words", [
    ("method: {A: x}\n", ["unknown key 'method'", "did you mean 'methods'?"]),
    ("datasets: {ECSD: x}\n", ["'ECSD'", "did you mean 'ECSSD'?"]),
    ("methods: {A: B}\n", ["'A' and 'B' both print as 'B'"]),
    ("methods: 3\n", ["'methods' must be a mapping"]),
    ("- a\n", ["expected a mapping"]),
])
def test_aliases_errors_name_the_closest_valid_key(tmp_path, text, words):
    path = tmp_path / "aliases.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        check_aliases(read_aliases(path), ["DUTS-TE", "ECSSD"], list("ABCD"))
    for word in words:
        assert word in str(error.value)


def test_a_sod_table_prints_its_matting_measures_apart_in_their_units():
    document = _document({("D", m): {"mae": 0.05 + i / 100, "sad": 24569.8 + i, "s_measure": 0.9}
                          for i, m in enumerate("AB")})
    per_dataset = markdown_table(document)
    sod, matting = per_dataset.split("### D (matting measures)")
    assert "sad" not in sod and "SAD" not in sod and "24569.8" not in per_dataset
    assert "| method | images | SAD (÷1000) ↓ |" in matting and "| A | 12 | **24.57** |" in matting
    tables = combined_tables(document, None, Aliases())
    assert [t.title for t in tables] == ["", "matting measures"]
    assert [c[0] for c in tables[0].columns] == ["mae", "s_measure"] and tables[1].columns[0][1] == "SAD (÷1000)"
    assert r"SAD ($\div$1000) $\downarrow$" in combined_latex(tables, Aliases())
    matting_run = dict(document, task="matting", protocol="dim")
    assert "(matting measures)" not in markdown_table(matting_run)


def test_a_birefnet_run_keeps_its_rounding_with_paper_names_and_marks():
    document = _document({("DIS-VD", m): {"f_measure_max": f, "birefnet_hce": h}
                          for m, f, h in (("A", 0.91249, 1016.4), ("B", 0.9, 980.6), ("C", 0.8, 1200.0))})
    document.update(protocol="birefnet", task="DIS5K", higher_is_better={"f_measure_max": True, "birefnet_hce": False})
    md = combined_markdown(combined_tables(document, None, Aliases()), Aliases())
    assert "| **method** | F^max_β ↑ | HCE_γ ↓ |" in md
    assert "| A | **.912** | <ins>1016</ins> |" in md and "| B | <ins>.900</ins> | **981** |" in md


def test_xlsx_is_a_workbook_with_numbers_merges_and_marks(tmp_path):
    """combined.xlsx read back with openpyxl: the datasets merged over their columns, numbers (not text) with a number
    format of their printed decimals, top-1/2/3 bold / underlined / italic, ``-`` as text, the subset note below."""
    openpyxl = pytest.importorskip("openpyxl")
    path = tmp_path / "t.xlsx"
    write_xlsx(path, xlsx_sheets(combined_tables(FOUR, None, Aliases()), Aliases()))
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == ["Results"]
    ws = book["Results"]
    assert ws["A1"].value == "method" and ws["B1"].value == "DUTS-TE" and ws["D1"].value == "ECSSD"
    assert {str(r) for r in ws.merged_cells.ranges} == {"A1:A2", "B1:C1", "D1:E1"}
    assert ws["B1"].font.b and ws["B2"].value == "MAE ↓" and ws["C2"].value == "S_α ↑" and ws["A3"].value == "A"
    assert ws["B3"].value == 0.04 and isinstance(ws["B3"].value, float) and ws["B3"].number_format == "0.000"
    assert ws["B5"].value == 0.03 and ws["B5"].font.b and ws["B3"].font.u and ws["B4"].font.i  # MAE: C, A, B
    assert not (ws["B6"].font.b or ws["B6"].font.u or ws["B6"].font.i) and ws["B6"].value == 0.06
    assert ws["D5"].value == "-" and ws["D5"].data_type == "s"
    assert ws["A8"].value == "† A on ECSSD: scored on 11 of 12 images"


def test_xlsx_transposed_and_a_name_a_workbook_cannot_hold(tmp_path):
    """``--transpose`` lays datasets x metrics out as rows; a control character in a name (which a workbook cannot
    hold) is written as ``\\xNN``, as an OS name's undecodable byte is."""
    openpyxl = pytest.importorskip("openpyxl")
    document = _document({("D", "bell\x07"): {"mae": 0.5}, ("D", "plain"): {"mae": 0.25}})
    path = tmp_path / "t.xlsx"
    write_xlsx(path, xlsx_sheets(combined_tables(document, 2, Aliases()), Aliases(), transpose=True))
    ws = openpyxl.load_workbook(path).active
    assert [ws.cell(1, c).value for c in (1, 2, 3, 4)] == ["dataset", "metric", "bell\\x07", "plain"]
    assert ws["A2"].value == "D" and ws["B2"].value == "MAE ↓" and ws["C2"].value == 0.5 and ws["D2"].font.b
    assert ws["C2"].number_format == "0.00" and not ws.merged_cells.ranges


def test_without_openpyxl_the_workbook_is_left_out_and_the_extra_named(monkeypatch, capsys):
    """The command never skips a file without naming it: no openpyxl, no combined.xlsx, and stderr says what to
    install; the other tables are written."""
    monkeypatch.setitem(sys.modules, "openpyxl", None)  # an import of it fails, as when it is not installed
    writers = table_writers(FOUR, argparse.Namespace(combined=True))
    assert "combined.xlsx" not in writers and {"combined.md", "combined.tex", "combined.csv"} <= set(writers)
    err = capsys.readouterr().err
    assert "combined.xlsx not written" in err and 'pip install "nobg_metrics[xlsx]"' in err


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """Two datasets, three methods: ``noisy`` (u8), ``perfect`` (the gt itself) and ``half`` (ECSSD lacks one)."""
    root = tmp_path_factory.mktemp("tables")
    for name, seed in (("DUTS-TE", 0), ("ECSSD", 3)):
        make_dataset(root / name, count=5, seed=seed, formats=("u8",))
        shutil.copytree(root / name / "gt", root / name / "perfect")
        shutil.copytree(root / name / "u8", root / name / "half")
    (root / "ECSSD" / "half" / "img_04.png").unlink()
    methods = {m: {d: str(root / d / ("u8" if m == "noisy" else m)) for d in ("DUTS-TE", "ECSSD")}
               for m in ("noisy", "perfect", "half")}
    config = root / "run.json"
    config.write_text(json.dumps({"datasets": {d: {"gt": str(root / d / "gt")} for d in ("DUTS-TE", "ECSSD")},
                                  "methods": methods}), encoding="utf-8")
    (root / "aliases.yaml").write_text("methods: {perfect: Oracle, noisy: null}\ndatasets: [ECSSD]\n")
    out = root / "out"
    assert main(["eval", "--config", str(config), "--out", str(out), "--metrics", "mae", "s_measure", "sad",
                 "--allow-missing", "--combined", "--aliases", str(root / "aliases.yaml"), *FAST]) == 0
    return out


def test_the_command_writes_every_table_through_the_combined_files(run):
    document = read_results(run)
    assert {"table.md", "table.tex", "combined.md", "combined.tex", "combined.csv", "combined.xlsx"} <= \
        {p.name for p in run.iterdir()}
    md = (run / "combined.md").read_text()
    lines = md.splitlines()
    assert lines[0] == "| | ECSSD |  | DUTS-TE |  |" and lines[2] == "| **method** | MAE ↓ | S_α ↑ | MAE ↓ | S_α ↑ |"
    assert lines[3].startswith("| Oracle |") and lines[3].count("**") == 8  # the aliases' order; best everywhere
    assert lines[4].startswith("| noisy |") and lines[5].startswith("| half |") and "†" in lines[5]
    assert "† half on ECSSD: scored on 4 of 5 images" in md
    assert "## Matting measures" in md and "SAD (÷1000) ↓" in md
    table = (run / "table.md").read_text()
    assert "| Oracle | 5 |" in table and "### ECSSD (matting measures)" in table and "mae ↓" in table
    with (run / "combined.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["dataset"], r["method"]) for r in rows[:3]] == [("ECSSD", "Oracle"), ("ECSSD", "noisy"),
                                                               ("ECSSD", "half")]
    raw = {(r["dataset"], r["method"]): r for r in document["results"]}
    for row in rows:
        method = {"Oracle": "perfect"}.get(row["method"], row["method"])
        expected = raw[row["dataset"], method]
        assert int(row["images"]) == expected["images"] and row["of_images"] == "5"
        assert float(row["mae"]) == expected["metrics"]["mae"] and float(row["sad"]) == expected["metrics"]["sad"]


def test_transpose_and_a_misspelt_alias_in_the_command(run, tmp_path, capsys):
    config = run.parent / "run.json"
    out = tmp_path / "t"
    assert main(["eval", "--config", str(config), "--out", str(out), "--metrics", "mae", "--allow-missing",
                 "--transpose", "--digits", "4", *FAST]) == 0
    md = (out / "combined.md").read_text()
    assert "| dataset | metric | noisy | perfect | half |" in md and "| DUTS-TE | MAE ↓ |" in md
    assert "| ECSSD | MAE ↓ |" in md and re.search(r"\| \*\*0\.\d{4}\*\* \|", md)
    bad = tmp_path / "bad.yaml"
    bad.write_text("methods: {Perfect: x}\n")
    status = main(["eval", "--config", str(config), "--out", str(tmp_path / "b"), "--metrics", "mae",
                   "--allow-missing", "--aliases", str(bad), *FAST])
    assert status == EXIT_USAGE and "did you mean 'perfect'?" in capsys.readouterr().err


def test_every_per_dataset_table_follows_the_one_layout_rule():
    """table.md / table.tex (and the console, which prints table.md) as the combined tables lay out a column: the
    top three marked, ``†`` and a footnote for a row scored on a subset, paper names under a preset."""
    md = markdown_table(FOUR)
    assert "| A | 12 | <ins>0.040</ins> | **0.900** |" in md and "| D | 12 | 0.060 | 0.800 |" in md
    assert "| A | 11 | **0.030**† | **0.900** |" in md and "† A: scored on 11 of 12 images" in md
    assert "| method | images | mae ↓ | s_measure ↑ |" in md and md.rstrip().endswith("(at the printed precision).")
    tex = latex_table(FOUR)
    assert r"\providecommand{\first}[1]{\textbf{#1}}" in tex
    assert r"A & \first{0.030}$^\dagger$ & \first{0.900} \\" in tex
    assert r"$^\dagger$ A: scored on 11 of 12 images" in tex and tex.count("{") == tex.count("}")
    preset = dict(FOUR, preset="sod")
    assert "| method | images | MAE ↓ | S_α ↑ |" in markdown_table(preset)
    assert r"Method & MAE $\downarrow$ & $S_\alpha$ $\uparrow$ \\" in latex_table(preset)
