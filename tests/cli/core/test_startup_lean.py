"""The command's lean start-up: torchmetrics' import of matplotlib is skipped while the command imports its run (the
flag restored afterwards), the cyclic garbage collector is paused over a fresh process's first import of torch, and
the functional and metrics packages import only the domain asked for."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nobg_metrics.cli.core.startup import deferred_imports
from tests.cli.core.lean_runs import lean_runs


def test_a_hidden_dependency_reads_absent_inside_the_block_only(tmp_path, monkeypatch):
    """A module of ``hidden`` imported inside the block sees its dependency's flag false; the flag is restored on
    leaving; a dependency already imported is not hidden."""
    (tmp_path / "flags_mod.py").write_text("AVAILABLE = True\n")
    (tmp_path / "plot_mod.py").write_text("from flags_mod import AVAILABLE\nSEEN = AVAILABLE\n")
    (tmp_path / "plot_mod2.py").write_text("from flags_mod import AVAILABLE\nSEEN = AVAILABLE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("flags_mod", "plot_mod", "plot_mod2"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    hidden = {"plot_mod": ("heavy_dependency_not_imported", "flags_mod", "AVAILABLE")}
    with deferred_imports({}, hidden):
        import plot_mod

        assert plot_mod.SEEN is False
    import flags_mod

    assert flags_mod.AVAILABLE is True
    with deferred_imports({}, {"plot_mod2": ("json", "flags_mod", "AVAILABLE")}):  # json is imported: no time to save
        import plot_mod2

        assert plot_mod2.SEEN is True


def test_the_collector_is_paused_over_a_fresh_process_imports_only():
    code = ("import gc\nfrom nobg_metrics.cli.core.startup import collector_paused\n"
            "with collector_paused():\n    during = gc.isenabled()\n    import email.parser\n"
            "print(during, gc.isenabled(), gc.get_freeze_count() > 0)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.split() == ["False", "True", "True"]


def test_one_domain_module_imports_no_other_domain():
    code = ("import sys\nimport nobg_metrics.functional.instance.statistics\n"
            "import nobg_metrics.metrics.instance.mean_average_precision\n"
            "print(sorted({m.split('.')[2] for m in sys.modules if m.startswith(('nobg_metrics.functional.', "
            "'nobg_metrics.metrics.')) and m.count('.') >= 2}))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    domains = json.loads(result.stdout.replace("'", '"'))
    assert "instance" in domains and not {"sod", "matting", "boundary", "video", "panoptic"} & set(domains)


@pytest.mark.slow
def test_instances_and_panoptic_runs_do_not_import_matplotlib(tmp_path):
    """A 1-image ``instances`` run and ``panoptic``'s import of its run never import matplotlib; torchmetrics' flag
    reads as it did once the command's imports are done, and the collector runs again."""
    code = ("import gc, sys\nfrom nobg_metrics.cli.entry import main\nstatus = main(sys.argv[1:])\n"
            "from torchmetrics.utilities import imports\n"
            "print('matplotlib' in sys.modules, bool(imports._MATPLOTLIB_AVAILABLE), gc.isenabled())\n"
            "sys.exit(status)")
    for argv, status in lean_runs(tmp_path):
        result = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300)
        assert result.returncode == status, result.stderr
        assert result.stdout.split()[-3:] == ["False", "True", "True"]
