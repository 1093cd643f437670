#!/usr/bin/env bash
# Runs shellcheck (Debian's, installed when missing) on every shell script of hack/; fails on any
# finding, style ones included. A finding that is right to ignore is disabled where it is, with
# the reason: `# shellcheck disable=SCnnnn # why`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"
source "${ROOT}/hack/lib/debian.sh"
cd "${ROOT}"

ensure_debs shellcheck
mapfile -t scripts < <(git ls-files -- 'hack/*.sh' 'hack/lib/*.sh')
# -x follows the sourced files; -P . resolves "${ROOT}/hack/lib/..." from the module root.
shellcheck -x -P . "${scripts[@]}"
log "shellcheck: ${#scripts[@]} scripts clean"
