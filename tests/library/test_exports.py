"""The export lists of ``nobg_metrics.functional``, ``nobg_metrics.metrics`` and their domain packages are written
out (static tools see every name) and are exactly what their modules' ``__all__`` give (``tools/exports.py``)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import exports  # noqa: E402  (tools/ is a scripts folder, not a package)


def test_the_written_lists_are_what_the_modules_give():
    result = subprocess.run([sys.executable, "tools/exports.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("package", exports.packages(), ids=lambda p: ".".join(p.relative_to(ROOT).parts))
def test_every_listed_name_is_the_object_its_module_defines(package):
    module = importlib.import_module(".".join(package.relative_to(ROOT).parts))
    for source, names in exports.exports(package):
        defining = importlib.import_module(source)
        for name in names:
            assert getattr(module, name) is getattr(defining, name), f"{module.__name__}.{name}"
    listed = [name for _, names in exports.exports(package) for name in names]
    assert sorted(module.__all__) == sorted(listed) and len(set(listed)) == len(listed)


def test_a_stale_list_is_caught(tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text('"""A package."""\n')
    (package / "one.py").write_text('__all__ = ["f"]\n\ndef f():\n    pass\n')
    assert "from pkg.one import f" not in (package / "__init__.py").read_text()
    monkeypatch.setattr(exports, "ROOT", tmp_path)
    assert exports.render(package).count('"f"') == 1 and "from pkg.one import f" in exports.render(package)
