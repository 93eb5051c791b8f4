"""The metric-names page (docs/metric_names.md on the site): every metric name the command and ``make_collection``
accept, and the structured-input classes, from the catalog.

The page is not committed: ``mkdocs build`` writes it (``tools/mkdocs_hooks.py`` adds it as a generated file), so a
metric added to the catalog is on the page without a hand step. ``python tools/metric_names.py`` prints it (``--out
FILE`` writes it); ``tests/cli/test_metric_names_page.py`` checks it against the catalog. The unknown-metric message of
``nobg-metrics eval --metrics`` points at this page.

The rows come from the catalog (``nobg_metrics.catalog``): names, classes, tiers, headers, references, kinds and
preparers, PySODEvalToolkit's names.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the checkout's package, not an installed copy
    sys.path.insert(0, str(ROOT))

PAGE = "metric_names.md"
"""The page's path under docs/."""


def metric_rows() -> list[tuple[str, str, str, str, str]]:
    """``(name, class, tier, table header, reference)`` of every ``"maps"`` catalog entry, in the catalog's order (the
    tiers' first); BiRefNet's own columns (``--protocol birefnet`` only) last."""
    from nobg_metrics.catalog import CATALOG

    maps = [d for d in CATALOG.values() if d.kind == "maps"]
    rows = [(d.name, d.metric.__name__, d.tier or "by name", d.header[0], d.reference)
            for d in maps if d.protocol is None]
    return rows + [(d.name, f"{d.metric.__name__} (BiRefNet's column)", f"--protocol {d.protocol}", d.header[0],
                    d.reference) for d in maps if d.protocol is not None]


def structured_rows() -> list[tuple[str, str, str, str, str]]:
    """``(name, class, input kind, preparer, reference)`` of the catalog entries that take structured inputs (no
    collection)."""
    from nobg_metrics.catalog import CATALOG

    return [(d.name, d.metric.__name__, d.kind, d.preparer, d.reference) for d in CATALOG.values() if d.kind != "maps"]


def render() -> str:
    """The page's text."""
    from nobg_metrics.cli.eval.toolkit import toolkit_metrics

    rows = metric_rows()
    collection = sum(row[2] != "--protocol birefnet" for row in rows)  # BiRefNet's are catalog names too
    lines = ["# Metric names", "",
             "<!-- generated at docs build by tools/mkdocs_hooks.py (tools/metric_names.py) from the catalog -->", "",
             (f"Every name `nobg-metrics eval --metrics` accepts ({len(rows)}): the {collection} of "
             "`make_collection(metrics=...)` in the registry's order — the tiers' members first (`cheap` ⊂ `medium` ⊂ "
             "`expensive`), then those available by name only (the confusion family's `<measure>_<mode>`, the "
             "size-invariant, P3M, boundary and context entries) — then BiRefNet's own columns. *Table header* is how "
             "the combined tables, and every table under a `--preset`, print the column ([tables](tables.md)); "
             "*reference* the tool it equals."), "",
             "| name | class | tier | table header | reference |", "|---|---|---|---|---|"]
    lines += [f"| `{name}` | `{cls}` | {tier} | {header} | {reference} |"
              for name, cls, tier, header, reference in rows]
    lines += ["", "## Structured inputs", "",
              ("The catalog's classes whose `update` takes other inputs than prediction and ground-truth maps: each "
               "is used on its own (a collection refuses them) and by its own subcommand or preset ([cli](cli.md)). "
               "*Preparer* is the function that checks and groups its inputs."), "",
              "| name | class | input kind | preparer | reference |", "|---|---|---|---|---|"]
    lines += [f"| `{name}` | `{cls}` | {kind} | `{preparer}` | {reference} |"
              for name, cls, kind, preparer, reference in structured_rows()]
    lines += ["", "## PySODEvalToolkit's names", "",
              ("`--metric-names` (PySODEvalToolkit's flag) takes these with the toolkit's meaning, `--metrics` too "
               "where the name is not a collection name above (`dice`, `mae` keep the collection's meaning there). "
               "Its result columns (`maxem`, `avgfmeasure`, `adpiou`, ...) and `tools/converter.py`'s (`maxF`, `adpE`, "
               "`wFm`, `SM`; any case) name one entry each ([cli](cli.md#coming-from-pysodevaltoolkit)); each "
               "entry's names are its catalog descriptor's `toolkit`."), "",
              "| toolkit name | entries |", "|---|---|"]
    lines += [f"| `{name}` | {' '.join(f'`{entry}`' for entry in entries)} |"
              for name, entries in toolkit_metrics().items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--out" in argv:
        path = Path(argv[argv.index("--out") + 1])
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
