# shellcheck shell=bash
# Shared helpers for the hack/ scripts. Source it; it defines functions only.

log() {
  printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2
}

die() {
  log "ERROR: $*"
  exit 1
}

# port_in_use PORT: true when something listens on TCP PORT (any address).
port_in_use() {
  local port="$1"
  if command -v ss >/dev/null 2>&1; then
    [[ -n "$(ss -Hltn "sport = :${port}" 2>/dev/null)" ]]
  else
    (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null
  fi
}

# port_owner PORT: a line describing the listener on PORT, when ss can tell.
port_owner() {
  local port="$1"
  if command -v ss >/dev/null 2>&1; then
    ss -Hltnp "sport = :${port}" 2>/dev/null | awk '{ $1 = $1; print }' | head -n 3
  fi
}
