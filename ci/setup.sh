#!/usr/bin/env bash
# Install zarr3_backend with every test extra into the current Python.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --upgrade pip
python3 -m pip install --quiet -e ".[test]"
