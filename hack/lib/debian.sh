# shellcheck shell=bash
# Debian packages the hack/ scripts install. Source it after common.sh; it defines functions only.
#
# Packages are named, never pinned to a revision: Debian replaces revisions in place (a point
# release's 1.2-3 becomes 1.2-3+deb12u1 and the old one is gone from the mirrors).

# deb_installed PKG: true when dpkg has PKG installed.
deb_installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

# apt_get ARGS...: apt-get, waiting for another apt-get's lock instead of failing at once; a
# machine with stale or missing package lists (a new one) runs apt-get update once and retries.
apt_get() {
  local args=(-q -y -o DPkg::Lock::Timeout=600 "$@")
  apt-get "${args[@]}" >/dev/null 2>&1 && return 0
  log "apt-get $*: failed; running apt-get update once and retrying"
  apt-get -q -o DPkg::Lock::Timeout=600 update >/dev/null 2>&1 || true
  apt-get "${args[@]}" >/dev/null
}

# ensure_debs PKG...: installs the packages not installed yet (root only).
ensure_debs() {
  local pkg missing=()
  for pkg in "$@"; do
    deb_installed "${pkg}" || missing+=("${pkg}")
  done
  ((${#missing[@]})) || return 0
  [[ "$(id -u)" == 0 ]] || die "Debian packages missing: ${missing[*]} (apt-get install them as root)"
  log "apt-get install ${missing[*]}"
  apt_get install --no-install-recommends "${missing[@]}" || die "apt-get install ${missing[*]} failed"
}
