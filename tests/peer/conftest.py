"""torchmetrics' own detection tests (``unittests/``, written by ``tools/peer_tests.py``) on this library's classes.

They belong to the slow tier: every test under ``unittests/`` is marked ``slow`` and ``peer``, and the folder is not
even collected (imported) when the ``-m`` expression cannot select such a test, so the fast tier never imports them.
A test module whose import fails (a name our library lacks) is one failing test, ``<file>::import``, instead of a
collection error that would stop the whole slow tier; the vendored files are not collected for doctests (none there).
The tests listed in ``expected_failures.txt`` run as strict xfails with the reason given there.
torchmetrics' ``DDP`` tests need its process pool (``USE_PYTEST_POOL=1``): they are skipped here, as are its CUDA tests
on a machine without one (their own ``skipif``).
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

VENDORED = Path(__file__).resolve().parent / "unittests"
EXPECTED_FAILURES = Path(__file__).resolve().parent / "expected_failures.txt"


def _expected_failures() -> dict[str, str]:
    """Test id (under ``unittests/``, or its part before ``[`` or ``::``) -> why it fails today."""
    if not EXPECTED_FAILURES.exists():
        return {}
    lines = EXPECTED_FAILURES.read_text().splitlines()
    pairs = (line.split("|", 1) for line in lines if line.strip() and not line.startswith("#"))
    return {test_id.strip(): reason.strip() for test_id, reason in pairs}


def _reason(test_id: str, expected: dict[str, str]) -> str | None:
    for prefix, reason in expected.items():
        if test_id == prefix or (test_id.startswith(prefix) and test_id[len(prefix)] in "[:"):
            return reason
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "DDP: torchmetrics' multi-process tests (skipped: they need its process pool)")
    config.addinivalue_line("markers", "peer: torchmetrics' own tests run against this library (tests/peer)")


def _selects_peer_tests(config: pytest.Config) -> bool:
    """Whether the ``-m`` expression selects a test marked ``slow`` and ``peer``."""
    expression = config.getoption("markexpr")
    if not expression:
        return True
    try:
        from _pytest.mark.expression import Expression

        return bool(Expression.compile(expression).evaluate(lambda name, **kwargs: name in {"slow", "peer"}))
    except (ImportError, AttributeError, TypeError):  # pytest's private API moved: read the expression as words
        return "slow" in expression.split() and "not slow" not in expression


def _inside(path: Path) -> bool:
    path = Path(path).resolve()
    return path == VENDORED or VENDORED in path.parents


class _ImportFailure(pytest.Item):
    """Stands for the tests of a module that could not be imported: fails with the import's error."""

    def __init__(self, *, error: str, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        pytest.fail(f"the test module could not be imported:\n{self.error}", pytrace=False)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.name}: the module's import"


class _VendoredModule(pytest.Module):
    def collect(self) -> list[pytest.Item | pytest.Collector]:
        try:
            return list(super().collect())
        except Exception as error:  # noqa: BLE001 - whatever the import raises is the result being measured
            error_text = str(pytest.ExceptionInfo.from_exception(error).getrepr(style="short"))
            return [_ImportFailure.from_parent(self, name="import", error=error_text)]


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    return _VendoredModule.from_parent(parent, path=module_path) if _inside(module_path) else None


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(
    file_path: Path, parent: pytest.Collector
) -> Generator[None, list[pytest.Collector], list[pytest.Collector]]:
    collected = yield
    if _inside(file_path):
        return [node for node in collected if type(node).__name__ != "DoctestModule"]
    return collected


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    return True if _inside(collection_path) and not _selects_peer_tests(config) else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ddp = pytest.mark.skip(reason="torchmetrics' DDP tests need its process pool (USE_PYTEST_POOL=1): not run here")
    expected = _expected_failures()
    for item in items:
        if _inside(item.path):
            reason = _reason(item.nodeid.split("unittests/", 1)[-1], expected)
            if reason is not None:
                item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.peer)
            if "DDP" in item.keywords:
                item.add_marker(ddp)
