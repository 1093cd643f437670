# shellcheck shell=bash
# Shared helpers for the hack/ scripts. Source it; it defines functions and the trap below.

# Under errexit a failing command ends the script, inside $(...) too, often with nothing said: name
# the command and its place instead (errtrace carries the trap into functions and subshells).
set -o errtrace
trap 'report_failure $? "${BASH_SOURCE[0]:-?}" "${LINENO}" "${BASH_COMMAND}"' ERR
report_failure() {
  # A function's own `return N` is a status it chose to give, not a failure to report.
  [[ "$4" != return* ]] || return 0
  # shellcheck disable=SC2016 # the backquotes are text
  printf '[%s] ERROR: %s:%s: `%s` exited %s\n' "$(date +%H:%M:%S)" "$2" "$3" "$4" "$1" >&2
}

log() {
  printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2
}

die() {
  log "ERROR: $*"
  exit 1
}

# tools_cache: the root of the cache where the hack/ scripts keep what they build or fetch, each
# under a key of its inputs (SANDBOX_TOOLS_CACHE overrides it).
tools_cache() { echo "${SANDBOX_TOOLS_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/sandbox-apiserver/tools}"; }

# digest_key: the cache key of what stdin holds (pins, sources, the toolchain).
digest_key() { sha256sum | cut -c1-16; }

# local_plane_build builds the Go side of the hack/ scripts (hack/localplane: the local plane, and
# the certificates deploy-certs.sh makes) into _output/bin/local-plane; go build
# answers from its cache when nothing changed. Scripts call it once, at their top level: a call in
# $(...) would not remember it.
LOCAL_PLANE_BUILT=""
local_plane_build() {
  # umask 022: a caller's stricter umask (deploy-certs.sh's) would make _output/ unreadable to the
  # real node's containers in a user namespace (runc reaches their root filesystems below it).
  (cd "${ROOT}" && umask 022 && CGO_ENABLED=0 go build -trimpath -o "${ROOT}/_output/bin/local-plane" ./hack/localplane) ||
    die "cannot build hack/localplane"
  LOCAL_PLANE_BUILT=1
}

# local_plane ARGS...: runs local-plane for this checkout.
local_plane() {
  [[ -n "${LOCAL_PLANE_BUILT}" ]] || local_plane_build
  "${ROOT}/_output/bin/local-plane" -root "${ROOT}" "$@"
}
