"""``python -m nobg_metrics eval ...`` (also under ``torchrun ... -m nobg_metrics eval ...``)."""

from __future__ import annotations

import sys

from nobg_metrics.cli.entry import main

if __name__ == "__main__":
    sys.exit(main())
