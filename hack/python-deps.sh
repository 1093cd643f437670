#!/usr/bin/env bash
# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0

# Installs what the Python SDK (clients/python) and its tests need from Debian's packages, for
# Debian's own python3: PyPI is not reachable where the project is built and tested. Prints the
# interpreter to use.
set -euo pipefail

PYTHON=/usr/bin/python3
PACKAGES=(python3-kubernetes python3-aiohttp python3-pytest python3-setuptools python3-pip)

missing=()
for pkg in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})); then
	sudo=()
	((EUID == 0)) || sudo=(sudo)
	export DEBIAN_FRONTEND=noninteractive
	# Package lists of a fresh machine are stale: refresh them once when the install fails.
	"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 ||
		{ "${sudo[@]}" apt-get update -q >&2 && "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; }
fi
"$PYTHON" -c 'import kubernetes, aiohttp, pytest, setuptools' >&2
echo "$PYTHON"
