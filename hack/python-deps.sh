#!/usr/bin/env bash
# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0

# Installs what the Python SDK (clients/python) and its tests need from Debian's packages, for
# Debian's own python3: PyPI is not reachable where the project is built and tested. Prints the
# interpreter to use. Another python3 may come first on PATH (pyenv's): install the SDK into a
# venv of this one with its site packages (clients/python/README.md).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"
source "${ROOT}/hack/lib/debian.sh"

PYTHON=/usr/bin/python3
export DEBIAN_FRONTEND=noninteractive
ensure_debs python3-kubernetes python3-aiohttp python3-pytest python3-setuptools python3-pip python3-venv
"${PYTHON}" -c 'import kubernetes, aiohttp, pytest, setuptools' >&2
echo "${PYTHON}"
