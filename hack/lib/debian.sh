# shellcheck shell=bash
# Debian packages the hack/ scripts install. Source it after common.sh; it defines functions only.
#
# Packages are named, never pinned to a revision: Debian replaces revisions in place (a point
# release's 1.2-3 becomes 1.2-3+deb12u1 and the old one is gone from the mirrors).

# deb_installed PKG: true when dpkg has PKG installed.
deb_installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

# The one retry policy of the hack/ scripts for apt: package lists of a new machine are missing or
# stale (a revision they name is gone from the mirror), so an apt command that fails is run again
# once after apt-get update, which runs at most once per script (and only as root).
APT_LISTS_UPDATED=""

# apt_update_once: refreshes the package lists unless this script did already; false when it may
# not (not root) or did already.
apt_update_once() {
  [[ -z "${APT_LISTS_UPDATED}" && "$(id -u)" == 0 ]] || return 1
  APT_LISTS_UPDATED=1
  log "apt: refreshing the package lists (apt-get update), once"
  apt-get -q -o DPkg::Lock::Timeout=600 update >/dev/null 2>&1 || log "apt: apt-get update failed; trying the lists as they are"
}

# apt_retry CMD...: runs CMD (an apt command); when it fails, refreshes the lists once and runs it
# again.
apt_retry() {
  "$@" && return 0
  apt_update_once || return 1
  "$@"
}

# apt_get ARGS...: apt-get, waiting for another apt-get's lock instead of failing at once.
apt_get() {
  apt_retry apt-get -q -y -o DPkg::Lock::Timeout=600 "$@" >/dev/null
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
