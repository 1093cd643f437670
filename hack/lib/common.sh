# shellcheck shell=bash
# Shared helpers for the hack/ scripts. Source it; it defines functions and the trap below.

# Under errexit a failing command ends the script, inside $(...) too, often with nothing said: name
# the command and its place instead (errtrace carries the trap into functions and subshells).
set -o errtrace
trap 'report_failure $? "${BASH_SOURCE[0]:-?}" "${LINENO}" "${BASH_COMMAND}"' ERR
report_failure() {
  # A function's own `return N` is a status it chose to give, not a failure to report.
  [[ "$4" != return* ]] || return 0
  printf '[%s] ERROR: %s:%s: `%s` exited %s\n' "$(date +%H:%M:%S)" "$2" "$3" "$4" "$1" >&2
}

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

# write_ca KEY CRT CN DAYS: a new self-signed CA certificate CRT for CN, valid for DAYS, with a
# fresh RSA key in KEY. Both the local control plane and the deploy certificates use it.
write_ca() {
  local key="$1" crt="$2" cn="$3" days="$4" cfg
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "${key}" 2>/dev/null
  chmod 600 "${key}"
  cfg="$(mktemp)"
  cat >"${cfg}" <<CONF
[req]
distinguished_name = dn
prompt = no
[dn]
CN = ${cn}
[ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
CONF
  openssl req -x509 -new -key "${key}" -sha256 -days "${days}" \
    -config "${cfg}" -extensions ext -out "${crt}"
  rm -f "${cfg}"
}
