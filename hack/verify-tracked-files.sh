#!/usr/bin/env bash
# Fails when git tracks a binary: any ELF executable or object, or any file over 1 MiB other than
# generated source (pkg/generated/, zz_generated.*, checked by hack/verify-codegen.sh). Builds go to
# _output/ (ignored); a binary in the index makes every clone download it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"
cd "${ROOT}"

MAX_BYTES=$((1024 * 1024))
ELF_MAGIC=$'\x7fELF'
bad=()

# Files of the index present in the work tree (one deleted there is checked at its next commit).
files="$(mktemp)"
trap 'rm -f "${files}"' EXIT
git ls-files -z | while IFS= read -r -d '' path; do
  [[ -f "${path}" && ! -L "${path}" ]] && printf '%s\0' "${path}"
done >"${files}"

while IFS=$'\t' read -r size path; do
  case "${path}" in pkg/generated/* | */zz_generated.*) continue ;; esac
  ((size <= MAX_BYTES)) || bad+=("${path} (${size} bytes, over ${MAX_BYTES})")
done < <(xargs -0 -r stat -c $'%s\t%n' -- <"${files}")

# grep finds the files with a line that starts as ELF does; only a file that starts so is one.
while IFS= read -r path; do
  magic=""
  IFS= read -r -n 4 magic <"${path}" || true
  [[ "${magic}" != "${ELF_MAGIC}" ]] || bad+=("${path} (an ELF binary)")
done < <(xargs -0 -r grep -l -a -- "^${ELF_MAGIC}" <"${files}" || true)

if ((${#bad[@]} > 0)); then
  printf '  %s\n' "${bad[@]}" >&2
  die "git tracks the files above: git rm --cached them and list them in .gitignore (builds belong in _output/)"
fi
log "tracked files: no ELF binary, nothing over 1 MiB but generated source"
