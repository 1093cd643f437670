# shellcheck shell=bash
# protoc for go-to-protobuf. Source it after common.sh and debian.sh; it defines functions only.
#
# The descriptor bytes protoc writes into generated.pb.go depend on its upstream version, so every
# machine must run the same one: 3.21.12 (Debian bookworm's). A protoc on PATH at that version is
# used as is; otherwise the three packages are fetched with apt-get download (no root needed) and
# unpacked into the tools cache, and protoc runs from there with its own libraries.
#
# Only the upstream version is pinned. Debian replaces a package's revision in place when a point
# release patches it (3.21.12-3 became 3.21.12-3+deb12u1) and the old one is then no longer listed,
# so the newest revision of that upstream version the package lists carry is taken.

PROTOC_VERSION="3.21.12"
PROTOC_DEBS=(protobuf-compiler libprotoc32 libprotobuf32)

# protoc_version_ok PROTOC: true when PROTOC prints the pinned version.
protoc_version_ok() {
  [[ "$("$1" --version 2>/dev/null)" == "libprotoc ${PROTOC_VERSION}" ]]
}

# madison_revisions: the version column of `apt-cache madison` output on stdin, one a line. madison
# pads its columns to align them (`protobuf-compiler |  3.21.12-3 | ...` with a short revision,
# one space with a long one), so the padding is trimmed whatever its width.
madison_revisions() {
  awk -F'|' 'NF >= 3 { gsub(/^[ \t]+|[ \t]+$/, "", $2); print $2 }'
}

# newest_revision_of VERSION: the newest Debian revision of upstream VERSION among the revisions on
# stdin (VERSION-N or VERSION-N+debXuY; none with an epoch), or nothing. Never fails, so a caller's
# $(...) under errexit ends only where it checks the result.
newest_revision_of() {
  awk -v prefix="$1-" 'index($0, prefix) == 1 && index($0, ":") == 0' | sort -V | tail -n 1
}

# protoc_debian_revision PKG: the newest Debian revision of PKG at the pinned upstream version
# that the package lists carry, or nothing. A machine whose lists were never fetched runs apt-get
# update once, when it may (root).
protoc_debian_revision() {
  local pkg="$1" revisions
  revisions="$(apt-cache madison "${pkg}" 2>/dev/null | madison_revisions || true)"
  if [[ -z "${revisions}" ]] && apt_update_once; then
    revisions="$(apt-cache madison "${pkg}" 2>/dev/null | madison_revisions || true)"
  fi
  newest_revision_of "${PROTOC_VERSION}" <<<"${revisions}"
}

# download_protoc_debs DIR: downloads PROTOC_DEBS at the pinned version into DIR; false, with the
# reason logged, when the lists name no such revision or apt-get cannot fetch it.
download_protoc_debs() {
  local dir="$1" pkg revision specs=()
  for pkg in "${PROTOC_DEBS[@]}"; do
    revision="$(protoc_debian_revision "${pkg}")"
    if [[ -z "${revision}" ]]; then
      log "protoc: the package lists carry no ${pkg} ${PROTOC_VERSION}"
      return 1
    fi
    specs+=("${pkg}=${revision}")
  done
  # apt-get download writes into the current directory.
  (cd "${dir}" && apt-get download "${specs[@]}" >/dev/null) && return 0
  log "protoc: apt-get download ${specs[*]} failed"
  return 1
}

# ensure_protoc DIR: makes sure a protoc at the pinned version is first on PATH, installing it
# under DIR (the tools cache) when it is not already on PATH.
ensure_protoc() {
  local cache_root="$1"
  if command -v protoc >/dev/null && protoc_version_ok protoc; then
    return 0
  fi
  local arch dir
  arch="$(dpkg --print-architecture 2>/dev/null)" || die "protoc ${PROTOC_VERSION} is not on PATH and dpkg is missing to fetch it"
  dir="${cache_root}/protoc-${PROTOC_VERSION}-${arch}"
  if ! protoc_version_ok "${dir}/bin/protoc"; then
    local tmp pkg deb
    log "protoc: fetching Debian's ${PROTOC_DEBS[*]} ${PROTOC_VERSION} into ${dir}"
    mkdir -p "${cache_root}"
    tmp="$(mktemp -d "${cache_root}/.protoc.XXXXXX")"
    # apt-get downloads as its _apt user when it can write here, else warns.
    chmod 755 "${tmp}"
    # Lists older than the archive may name a revision it no longer serves: fetch them anew once.
    apt_retry download_protoc_debs "${tmp}" ||
      { rm -rf "${tmp}"; die "apt-get download of Debian's ${PROTOC_DEBS[*]} ${PROTOC_VERSION} failed (run apt-get update, or put protoc ${PROTOC_VERSION} on PATH)"; }
    mkdir -p "${tmp}/root"
    for pkg in "${PROTOC_DEBS[@]}"; do
      deb="$(ls "${tmp}/${pkg}_"*.deb)"
      dpkg-deb -x "${deb}" "${tmp}/root"
    done
    # A wrapper that finds the unpacked libraries; installed by rename so an interrupted fetch
    # never leaves a half-unpacked protoc a later run would take as ready.
    mkdir -p "${tmp}/out/bin"
    mv "${tmp}/root/usr/bin/protoc" "${tmp}/out/bin/protoc.bin"
    mv "${tmp}/root/usr/lib" "${tmp}/out/lib"
    cat >"${tmp}/out/bin/protoc" <<'WRAPPER'
#!/usr/bin/env bash
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LD_LIBRARY_PATH="$(echo "${here}"/../lib/*-linux-gnu)${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}" exec "${here}/protoc.bin" "$@"
WRAPPER
    chmod +x "${tmp}/out/bin/protoc"
    rm -rf "${dir}"
    mv "${tmp}/out" "${dir}"
    rm -rf "${tmp}"
    protoc_version_ok "${dir}/bin/protoc" || die "protoc in ${dir} does not run"
  fi
  export PATH="${dir}/bin:${PATH}"
}
