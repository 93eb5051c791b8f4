"""Nothing lost, nothing silent: distinct exit statuses without tracebacks for user mistakes,
strict configs, every input entry scored or listed with its reason, trimap levels checked, ``--out``
checked before scoring, outputs replaced all at once, one run per ``--out``."""

from __future__ import annotations

import errno
import fcntl
import importlib
import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import nobg_metrics.cli.core.writing as cli_writing
from nobg_metrics.cli.core.signals import Interrupted
from nobg_metrics.cli.eval import loading, metric_sets
from nobg_metrics.cli.eval.main import (
    EXIT_BUSY,
    EXIT_INPUTS,
    EXIT_INTERNAL,
    EXIT_USAGE,
    main,
)
from nobg_metrics.cli.outputs import run_outputs
from nobg_metrics.io.images import read_mask
from tests.cli.folders import make_dataset, read_results

cli_main = importlib.import_module("nobg_metrics.cli.eval.main")  # the module (the package exports its main())

FAST = ["--workers", "0", "--quiet", "--no-plots", "--metrics", "mae", "iou_metric"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("errors")
    make_dataset(root, count=4, formats=("u8",))
    return root


def _eval(dataset: Path, out: Path, *extra: str, gt: Path | None = None, pred: Path | None = None) -> list[str]:
    return ["eval", "--gt", str(gt or dataset / "gt"), "--pred", str(pred or dataset / "u8"), "--out", str(out),
            *FAST, *extra]


def _clean_failure(capsys, status: int, expected: int, *words: str) -> str:
    err = capsys.readouterr().err
    assert status == expected, err
    assert "Traceback" not in err, err
    for word in words:
        assert word in err, (word, err)
    return err


@pytest.fixture
def no_scoring(monkeypatch):
    """Fail the test if scoring starts (checks that must come before it)."""
    def refuse(*args, **kwargs):
        raise AssertionError("scoring started")
    monkeypatch.setattr(cli_main, "score", refuse)


# exit statuses and messages ------------------------------------------------------------------------------


def test_empty_gt_folder_is_an_error(dataset: Path, tmp_path: Path, capsys, no_scoring) -> None:
    (tmp_path / "gt").mkdir()
    out = tmp_path / "out"
    for extra in ([], ["--allow-missing"]):
        status = main(_eval(dataset, out, *extra, gt=tmp_path / "gt"))
        _clean_failure(capsys, status, EXIT_INPUTS, "no gt image", "empty")
        assert not out.exists()


def test_gt_folder_of_unsupported_images_names_them(dataset: Path, tmp_path: Path, capsys, no_scoring) -> None:
    (tmp_path / "gt").mkdir()
    for path in (dataset / "gt").glob("*.png"):
        Image.open(path).save(tmp_path / "gt" / f"{path.stem}.gif")
    status = main(_eval(dataset, tmp_path / "out", gt=tmp_path / "gt"))
    _clean_failure(capsys, status, EXIT_INPUTS, "no gt image", "img_00.gif", "unsupported extension '.gif'")


def test_symlink_loop_gt_folder(dataset: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    status = main(_eval(dataset, tmp_path / "out", gt=tmp_path / "loop"))
    _clean_failure(capsys, status, EXIT_USAGE, "symlink loop")


@pytest.mark.parametrize("where", ["file", "under_a_file", "broken_link"])
def test_out_that_is_not_a_folder_is_refused_before_scoring(dataset: Path, tmp_path: Path, capsys, no_scoring,
                                                           where: str) -> None:
    (tmp_path / "file").write_text("not a folder")
    (tmp_path / "broken_link").symlink_to(tmp_path / "nowhere")
    out = {"file": tmp_path / "file", "under_a_file": tmp_path / "file" / "out",
           "broken_link": tmp_path / "broken_link"}[where]
    status = main(_eval(dataset, out))
    _clean_failure(capsys, status, EXIT_USAGE, "--out")
    assert (tmp_path / "file").read_text() == "not a folder"


def test_unwritable_out_is_refused_before_scoring(dataset: Path, tmp_path: Path, capsys, no_scoring) -> None:
    if os.geteuid() == 0:  # root writes anywhere permissions allow nothing: use a folder no one can write
        out = Path("/proc/self")
    else:
        out = tmp_path / "ro"
        out.mkdir()
        out.chmod(0o555)
    try:
        _clean_failure(capsys, main(_eval(dataset, out)), EXIT_USAGE, "--out", "not writable")
        _clean_failure(capsys, main(_eval(dataset, out / "sub")), EXIT_USAGE, "--out")
    finally:
        if out != Path("/proc/self"):
            out.chmod(0o755)


def test_internal_error_has_its_own_status_and_a_traceback(dataset: Path, tmp_path: Path, capsys,
                                                           monkeypatch) -> None:
    def boom(*args, **kwargs):
        raise RuntimeError("a bug")
    monkeypatch.setattr(cli_main, "score", boom)
    out = tmp_path / "out"
    status = main(_eval(dataset, out))
    err = capsys.readouterr().err
    assert status == EXIT_INTERNAL == 3 and "internal error" in err and "Traceback" in err and "a bug" in err
    assert not out.exists()


def test_interruption_in_process_returns_128_plus_the_signal(dataset: Path, tmp_path: Path, capsys,
                                                            monkeypatch) -> None:
    def interrupted(*args, **kwargs):
        raise Interrupted(signal.SIGTERM)
    monkeypatch.setattr(cli_main, "score", interrupted)
    before = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    status = main(_eval(dataset, tmp_path / "out"))
    _clean_failure(capsys, status, 128 + signal.SIGTERM, "interrupted (SIGTERM)", "unchanged")
    assert not (tmp_path / "out").exists()  # the folder the run created for its lock is gone again
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == before  # handlers restored


# strict configs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, content, message", [
    ("bad.yaml", "datasets: [\n", "not valid YAML"),
    ("latin.yaml", b"datasets: {\xe9t\xe9: gt}\n", "not UTF-8"),
    ("latin.json", b'{"datasets": {"\xe9": "gt"}}', "not UTF-8"),
    ("int.yaml", "datasets: {D: {gt: 5}}\nmethods: {M: {D: u8}}\n", "datasets.D.gt: expected a folder path"),
    ("typo.yaml", "datasets: {D: {gt: gt, sufix: .png}}\nmethods: {M: {D: u8}}\n", "unknown key 'sufix'"),
    ("typo2.yaml", "datasets: {D: {gt: {path: gt, prefx: a}}}\nmethods: {M: {D: u8}}\n", "unknown key 'prefx'"),
    ("typo3.yaml", "datasets: {D: gt}\nmethods: {M: {D: {path: u8, sufix: .png}}}\n", "methods.M.D: unknown key"),
    ("list.yaml", 'datasets: {D: {gt: gt, prefix: ["a"]}}\nmethods: {M: {D: u8}}\n', "prefix: expected a string"),
    ("path.yaml", "datasets: {D: {gt: {prefix: a}}}\nmethods: {M: {D: u8}}\n", "'path' is missing"),
    ("both.yaml", "datasets: {D: {gt: {path: gt}, suffix: .png}}\nmethods: {M: {D: u8}}\n", "both in 'gt'"),
    ("shape.yaml", "datasets: [gt]\nmethods: {M: {D: u8}}\n", "expected a mapping"),
    ("empty.yaml", "datasets: {D: ''}\nmethods: {M: {D: u8}}\n", "empty folder path"),
    ("bool.yaml", "datasets: {true: gt}\nmethods: {M: {D: u8}}\n", "names must be strings"),
    ("pysod.json", '{"M": {"D": {"path": "u8", "suffx": ".png"}}}', "unknown key 'suffx'"),
])
def test_bad_config_is_a_clean_usage_error(dataset: Path, tmp_path: Path, capsys, name: str, content, message: str
                                           ) -> None:
    path = dataset / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    status = main(["eval", "--config", str(path), "--out", str(tmp_path / "o"), *FAST])
    _clean_failure(capsys, status, EXIT_USAGE, message)
    assert not (tmp_path / "o").exists()


def test_config_names_may_be_integers(dataset: Path, tmp_path: Path) -> None:
    path = dataset / "years.yaml"
    path.write_text("datasets: {2007: {gt: gt, trimap: null}}\nmethods: {M: {2007: u8}}\n")
    assert main(["eval", "--config", str(path), "--out", str(tmp_path / "o"), *FAST]) == 0
    assert read_results(tmp_path / "o")["results"][0]["dataset"] == "2007"


# every entry scored or listed ----------------------------------------------------------------------------


def _messy(dataset: Path, root: Path) -> tuple[Path, Path]:
    gt, pred = root / "gt", root / "pred"
    gt.mkdir()
    pred.mkdir()
    for path in (dataset / "gt").glob("*.png"):
        (gt / path.name).write_bytes(path.read_bytes())
    for path in sorted((dataset / "u8").glob("*.png"))[1:]:
        (pred / path.name).write_bytes(path.read_bytes())
    (gt / ".hidden.png").write_bytes((dataset / "gt" / "img_00.png").read_bytes())
    (gt / "img_09.png").symlink_to(gt / "img_09.png")  # a looping link: an unreadable gt
    (gt / "readme.txt").write_text("notes")
    (pred / "img_09.png").write_bytes((dataset / "u8" / "img_00.png").read_bytes())
    (pred / "img_00.png").symlink_to(root / "nowhere.png")  # a broken link: an unreadable prediction
    Image.open(dataset / "u8" / "img_01.png").save(pred / "img_01.gif")
    (pred / "sub").mkdir()
    return gt, pred


def test_every_entry_is_scored_or_listed(dataset: Path, tmp_path: Path, capsys) -> None:
    gt, pred = _messy(dataset, tmp_path)
    out = tmp_path / "out"
    status = main(_eval(dataset, out, gt=gt, pred=pred))
    err = _clean_failure(capsys, status, EXIT_INPUTS, "unreadable", "img_00.png", "broken symlink", "img_09.png",
                         "symlink loop")
    assert not out.exists(), err
    assert main(_eval(dataset, out, "--allow-missing", gt=gt, pred=pred)) == 0
    err = capsys.readouterr().err
    document = read_results(out)
    assert "not_scored" in document
    reasons = {entry["file"]: entry["reason"] for entry in document["not_scored"]}
    assert reasons == {"gt/.hidden.png": "hidden file", "gt/readme.txt": "unsupported extension '.txt'",
                       "img_01.gif": "unsupported extension '.gif'",
                       "sub": "a folder (subfolders are not searched)"}
    for name in reasons:  # the console summary names them too
        assert name.split("/")[-1] in err, (name, err)
    unreadable = {entry["file"]: entry["reason"] for entry in document["unreadable"]}
    assert "broken symlink" in unreadable["img_00.png"] and "symlink loop" in unreadable["img_09.png"]
    # accounting: each entry of both folders is scored, unreadable, missing, extra or not scored
    scored = {f"{name}.png" for name in ("img_01", "img_02", "img_03")}
    assert document["results"][0]["images"] == len(scored)
    listed = scored | set(unreadable) | {e["file"] for e in document["extra"]} | set(reasons) | \
        {e["file"].replace(".*", ".png") for e in document["missing"]}
    for folder, prefix in ((gt, "gt/"), (pred, "")):
        for entry in os.listdir(folder):
            assert entry in listed or prefix + entry in listed, entry


def test_a_broken_gt_without_prediction_is_named(dataset: Path, tmp_path: Path, capsys) -> None:
    """A gt that is a broken symlink is unreadable whether or not a prediction asks for it: named on
    stderr, in results.json and in the report, never called a missing prediction (nor silently left out)."""
    gt = tmp_path / "gt"
    gt.mkdir()
    for path in (dataset / "gt").glob("*.png"):
        (gt / path.name).write_bytes(path.read_bytes())
    (gt / "lost.png").symlink_to(tmp_path / "nowhere.png")  # no prediction of that name
    out = tmp_path / "out"
    err = _clean_failure(capsys, main(_eval(dataset, out, gt=gt)), EXIT_INPUTS, "gt/lost.png", "broken symlink")
    assert "missing files" not in err and not out.exists()
    assert main(_eval(dataset, out, "--skip-unreadable", gt=gt)) == 0
    assert "gt/lost.png  [broken symlink" in capsys.readouterr().err
    document = read_results(out)
    assert document["missing"] == [] and [e["file"] for e in document["unreadable"]] == ["gt/lost.png"]
    assert document["unreadable"][0]["method"] == "*" and document["results"][0]["images"] == 4
    page = (out / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="not-scored">' in page and "gt/lost.png" in page and "broken symlink" in page


def test_prefix_mismatch_is_listed(dataset: Path, tmp_path: Path) -> None:
    pred = tmp_path / "pred"
    pred.mkdir()
    for path in (dataset / "u8").glob("*.png"):
        (pred / f"p_{path.name}").write_bytes(path.read_bytes())
    (pred / "other.png").write_bytes((dataset / "u8" / "img_00.png").read_bytes())
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"datasets": {"D": str(dataset / "gt")},
                                  "methods": {"M": {"D": {"path": str(pred), "prefix": "p_"}}}}))
    assert main(["eval", "--config", str(config), "--out", str(tmp_path / "o"), *FAST]) == 0
    document = read_results(tmp_path / "o")
    assert document["results"][0]["images"] == 4
    assert [e["file"] for e in document["not_scored"]] == ["other.png"]
    assert "does not match" in document["not_scored"][0]["reason"]


# trimaps -------------------------------------------------------------------------------------------------


@pytest.fixture
def matting(dataset: Path, tmp_path: Path) -> Path:
    trimap = tmp_path / "trimap"
    trimap.mkdir()
    for path in (dataset / "gt").glob("*.png"):
        gt = np.asarray(Image.open(path))
        level = np.where(gt > 128, 255, 0).astype(np.uint8)
        level[:, 10:20] = 128
        if path.stem == "img_02":
            level[0, 0] = 100  # not a trimap level
        Image.fromarray(level).save(trimap / path.name)
    return trimap


def test_trimap_level_100_is_reported_by_name(dataset: Path, tmp_path: Path, capsys, matting: Path) -> None:
    out = tmp_path / "out"
    args = ["eval", "--gt", str(dataset / "gt"), "--pred", str(dataset / "u8"), "--trimap", str(matting),
            "--out", str(out), "--workers", "0", "--quiet", "--no-plots", "--metrics", "sad", "mae"]
    _clean_failure(capsys, main(args), EXIT_INPUTS, "img_02.png", "invalid trimap", "100")
    assert not out.exists()
    assert main([*args, "--allow-missing"]) == 0
    document = read_results(out)
    assert document["results"][0]["images"] == 3
    assert [(e["file"], e["reason"].split(":")[0]) for e in document["unreadable"]] == \
        [("img_02.png", "invalid trimap")]


@pytest.mark.parametrize("per_image", [True, False], ids=["per-image", "batched"])
def test_inputs_the_metrics_reject_are_recorded_by_name(dataset: Path, tmp_path: Path, capsys, matting: Path,
                                                        monkeypatch, per_image: bool) -> None:
    """The metrics' own checks (validate_args=True) as a backstop behind the reader's trimap check."""
    monkeypatch.setattr(metric_sets, "VALIDATE_ARGS", True)
    monkeypatch.setattr(loading, "read_trimap", read_mask)  # let the bad trimap through to the metrics
    args = ["eval", "--gt", str(dataset / "gt"), "--pred", str(dataset / "u8"), "--trimap", str(matting),
            "--workers", "0", "--quiet", "--no-plots", "--metrics", "sad", "mae", "--batch-size", "4",
            *([] if per_image else ["--no-per-image"])]
    _clean_failure(capsys, main([*args, "--out", str(tmp_path / "a")]), EXIT_INPUTS, "img_02.png",
                   "rejected by the metrics")
    assert main([*args, "--out", str(tmp_path / "b"), "--allow-missing"]) == 0
    document = read_results(tmp_path / "b")
    assert document["results"][0]["images"] == 3 and document["unreadable"][0]["file"] == "img_02.png"


# outputs: checked early, replaced at once, one run at a time ----------------------------------------------


def _previous(out: Path) -> dict[str, bytes]:
    out.mkdir(parents=True)
    files = {"results.json": b'{"previous": true}\n', "table.md": b"old\n", "mine.txt": b"kept\n"}
    for name, content in files.items():
        (out / name).write_bytes(content)
    return files


def test_a_failed_write_leaves_the_previous_outputs(dataset: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    out = tmp_path / "out"
    files = _previous(out)

    def disk_full(path, *args):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
    monkeypatch.setattr(run_outputs, "write_per_image_csv", disk_full)
    _clean_failure(capsys, main(_eval(dataset, out)), EXIT_INPUTS, "could not write", "No space left")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files  # no temp folder, no lock, nothing replaced


def test_success_replaces_outputs_and_leaves_no_lock_or_temp(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _previous(out)
    (out / f"{cli_writing.TMP_PREFIX}killed").mkdir()  # what a killed run leaves: removed by the next one
    (out / f"{cli_writing.TMP_PREFIX}killed" / "results.json").write_text("{half")
    assert main(_eval(dataset, out)) == 0
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt", "per_image.csv", "report.html", "results.json",
                                                     "stats.json", "stats.md", "table.md", "table.tex"]
    assert read_results(out)["results"][0]["images"] == 4 and (out / "mine.txt").read_bytes() == b"kept\n"


def test_a_second_run_into_a_held_out_fails_at_once(dataset: Path, tmp_path: Path, capsys, no_scoring) -> None:
    out = tmp_path / "out"
    files = _previous(out)
    with open(out / cli_writing.LOCK_NAME, "w") as holder:  # another run holds the folder
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        holder.write("12345\n")
        holder.flush()
        _clean_failure(capsys, main(_eval(dataset, out)), EXIT_BUSY, "in use by another nobg-metrics run",
                       "pid 12345")
    os.unlink(out / cli_writing.LOCK_NAME)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files


def test_unreadable_files_are_named_before_any_scoring(dataset: Path, tmp_path: Path, capsys, no_scoring) -> None:
    """A truncated PNG and a text file saved as .png fail the run before scoring starts (``no_scoring``: scoring
    would raise), each named with its reason; with --allow-missing the rest is scored."""
    preds = tmp_path / "preds"
    preds.mkdir()
    names = sorted(p.name for p in (dataset / "u8").glob("*.png"))
    for name in names:
        (preds / name).write_bytes((dataset / "u8" / name).read_bytes())
    whole = (preds / names[0]).read_bytes()
    (preds / names[0]).write_bytes(whole[: len(whole) // 2])  # truncated: its chunks stop short
    (preds / names[1]).write_text("not an image")
    err = _clean_failure(capsys, main(_eval(dataset, tmp_path / "out", pred=preds)), EXIT_INPUTS,
                         names[0], names[1], "unreadable files", "nothing was scored")
    assert "UnidentifiedImageError" in err or "cannot identify" in err
    assert not (tmp_path / "out").exists()
