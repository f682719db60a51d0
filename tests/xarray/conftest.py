"""The xarray tests need xarray (``pip install -e ".[xarray]"``): without it this area is skipped as a whole."""

from __future__ import annotations

import importlib.util

collect_ignore_glob = [] if importlib.util.find_spec("xarray") else ["test_*.py"]
