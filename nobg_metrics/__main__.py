"""``python -m nobg_metrics eval ...`` (also under ``torchrun ... -m nobg_metrics eval ...``)."""

from __future__ import annotations

from nobg_metrics.cli.entry import console

if __name__ == "__main__":
    console()
