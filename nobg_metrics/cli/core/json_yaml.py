"""Reading the command's JSON and YAML files: configs, ``--aliases``, ``--plot-style`` (docs/cli.md).

A file that cannot be read, is not UTF-8 or does not parse is a :class:`~nobg_metrics.cli.core.errors.ConfigError`
naming it. YAML (by the ``.yaml`` / ``.yml`` extension) needs PyYAML, the ``yaml`` extra. Standard library only
otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.errors import ConfigError


def load_json_or_yaml(path: Path) -> Any:
    """The data of a JSON file, or of a YAML file (``.yaml`` / ``.yml``); any problem is a ``ConfigError``."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte {error.start}: {error.reason}); save it as UTF-8") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read ({error.strerror or error})") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml  # the optional yaml extra, needed only by a YAML file
        except ImportError:
            raise ConfigError(f"{path}: YAML configs need PyYAML (pip install 'nobg_metrics[yaml]')") from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise ConfigError(f"{path}: not valid YAML ({' '.join(str(error).split())})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON ({error})") from None
