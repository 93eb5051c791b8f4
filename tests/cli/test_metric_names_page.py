"""docs/metric_names.md lists every metric name the command accepts, and is what tools/metric_names.py writes from
the registry (the page the unknown-metric message points at; issue 35 item 13)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from nobg_metrics.cli.core.names import PROTOCOL_ONLY_METRICS
from nobg_metrics.cli.eval.toolkit import TOOLKIT_METRICS
from nobg_metrics.collection import METRIC_NAMES

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("metric_names_tool", ROOT / "tools" / "metric_names.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_up_to_date_and_lists_every_name():
    tool = _tool()
    text = (ROOT / "docs" / "metric_names.md").read_text(encoding="utf-8")
    assert text == tool.render(), "docs/metric_names.md is out of date: run python tools/metric_names.py"
    for name in (*METRIC_NAMES, *PROTOCOL_ONLY_METRICS, *TOOLKIT_METRICS):
        assert f"| `{name}` |" in text, name
    assert tool.main(["--check"]) == 0


def test_the_unknown_metric_message_points_at_the_page():
    from nobg_metrics.cli.eval.main import METRIC_NAMES_PAGE

    assert (ROOT / METRIC_NAMES_PAGE).is_file()
