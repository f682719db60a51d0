#!/usr/bin/env bash
# The README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pytest -q -p no:cacheprovider "$@"
