"""The metric-names page (generated at docs build from the catalog by tools/metric_names.py, through the mkdocs hook
in tools/mkdocs_hooks.py) lists every name the command accepts with its class, tier, table header and reference, the
structured-input classes with their kind and preparer, and PySODEvalToolkit's names; the unknown-metric message
points at it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from nobg_metrics.catalog import CATALOG, METRIC_NAMES
from nobg_metrics.cli.core.names import paper_label
from nobg_metrics.cli.eval.toolkit import toolkit_metrics

ROOT = Path(__file__).resolve().parents[2]


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_page_lists_every_catalog_entry_with_its_label_and_reference():
    text = _module("metric_names").render()
    for name in METRIC_NAMES:
        entry = CATALOG[name]
        row = next(line for line in text.splitlines() if line.startswith(f"| `{name}` |"))
        assert f"`{entry.metric.__name__}" in row and f"| {paper_label(name)[0]} |" in row, row
        assert row.endswith(f"| {entry.reference} |"), row
    for entry in (d for d in CATALOG.values() if d.kind != "maps"):
        assert (f"| `{entry.name}` | `{entry.metric.__name__}` | {entry.kind} | `{entry.preparer}` | "
                f"{entry.reference} |") in text
    toolkit = toolkit_metrics()
    for name, entries in toolkit.items():
        assert f"| `{name}` | {' '.join(f'`{entry}`' for entry in entries)} |" in text, name
    assert text.count("\n| `") == len(CATALOG) + len(toolkit)  # one row each, nothing else


def test_the_page_is_not_committed_and_the_docs_hook_adds_it(tmp_path):
    assert not (ROOT / "docs" / "metric_names.md").exists()  # generated, never a stale copy
    hooks = _module("mkdocs_hooks")
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

    config = MkDocsConfig()
    config.load_dict({"site_name": "x", "docs_dir": str(ROOT / "docs"), "site_dir": str(tmp_path)})
    assert config.validate() == ([], [])
    config.plugins._current_plugin = None  # what mkdocs sets around each event while it builds
    files = hooks.on_files(Files([]), config=config)
    page = files.get_file_from_path("metric_names.md")
    assert page is not None and page.content_string == _module("metric_names").render()


def test_the_tool_prints_the_page():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "metric_names.py")], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.startswith("# Metric names\n") and "| `mae` | `MAE` | cheap | MAE |" in done.stdout


def test_the_unknown_metric_message_points_at_the_page():
    from nobg_metrics.cli.eval.main import METRIC_NAMES_PAGE

    assert METRIC_NAMES_PAGE == "docs/metric_names.md"  # the site's page (tools/mkdocs_hooks.py writes it)
