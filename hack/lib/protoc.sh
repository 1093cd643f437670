# shellcheck shell=bash
# protoc for go-to-protobuf. Source it after common.sh; it defines functions only.
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

# protoc_debian_revision PKG: the newest Debian revision of PKG at the pinned upstream version
# (PROTOC_VERSION-N or PROTOC_VERSION-N+debXuY) that the package lists carry, or nothing. A
# machine whose lists were never fetched runs apt-get update once, when it may (root).
protoc_debian_revision() {
  local pkg="$1" revisions
  revisions="$(apt-cache madison "${pkg}" 2>/dev/null | awk -F' [|] ' '{print $2}')"
  if [[ -z "${revisions}" && "$(id -u)" == 0 ]]; then
    log "protoc: no package lists for ${pkg}; running apt-get update once"
    apt-get update >/dev/null 2>&1 || true
    revisions="$(apt-cache madison "${pkg}" 2>/dev/null | awk -F' [|] ' '{print $2}')"
  fi
  # madison lists the newest first; sort again in case several sources disagree.
  grep -E "^${PROTOC_VERSION//./\\.}-[^:]+$" <<<"${revisions}" | sort -V | tail -n 1
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
    local tmp pkg deb revision specs=()
    for pkg in "${PROTOC_DEBS[@]}"; do
      revision="$(protoc_debian_revision "${pkg}")"
      [[ -n "${revision}" ]] || die "no Debian revision of ${pkg} ${PROTOC_VERSION} in the package lists (apt-get update, or install protoc ${PROTOC_VERSION} on PATH)"
      specs+=("${pkg}=${revision}")
    done
    log "protoc: fetching Debian ${specs[*]} into ${dir}"
    mkdir -p "${cache_root}"
    tmp="$(mktemp -d "${cache_root}/.protoc.XXXXXX")"
    # apt-get downloads as its _apt user when it can write here, else warns.
    chmod 755 "${tmp}"
    # apt-get download writes into the current directory.
    (cd "${tmp}" && apt-get download "${specs[@]}" >/dev/null) \
      || { rm -rf "${tmp}"; die "apt-get download of ${specs[*]} failed (apt-get update, or install protoc ${PROTOC_VERSION} on PATH)"; }
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
