#!/usr/bin/env bash
# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0

# The Python SDK's unit tests, against the package as pip installs it without PyPI (so a broken
# pyproject.toml fails here too). pytest's exit code is passed on: 5, no tests collected, fails.
set -euo pipefail
cd "$(dirname "$0")/.."

python=$(hack/python-deps.sh)
site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
"$python" -m pip install --quiet --root-user-action=ignore --no-index --no-build-isolation --no-deps --target "$site" ./clients/python
cd clients/python
PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 "$python" -m pytest -q -p no:cacheprovider tests/unit
