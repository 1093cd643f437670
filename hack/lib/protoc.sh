# shellcheck shell=bash
# protoc for go-to-protobuf. Source it after common.sh; it defines functions only.
#
# The descriptor bytes protoc writes into generated.pb.go depend on its version, so every machine
# must run the same one: Debian's 3.21.12-3 (bookworm). A protoc on PATH at that version is used
# as is; otherwise the three packages are fetched with apt-get download (no root needed) and
# unpacked into the tools cache, and protoc runs from there with its own libraries.

PROTOC_VERSION="3.21.12"
PROTOC_DEBIAN_VERSION="3.21.12-3"
PROTOC_DEBS=(protobuf-compiler libprotoc32 libprotobuf32)

# protoc_version_ok PROTOC: true when PROTOC prints the pinned version.
protoc_version_ok() {
  [[ "$("$1" --version 2>/dev/null)" == "libprotoc ${PROTOC_VERSION}" ]]
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
  dir="${cache_root}/protoc-${PROTOC_DEBIAN_VERSION}-${arch}"
  if ! protoc_version_ok "${dir}/bin/protoc"; then
    log "protoc: fetching Debian ${PROTOC_DEBIAN_VERSION} into ${dir}"
    local tmp pkg deb
    mkdir -p "${cache_root}"
    tmp="$(mktemp -d "${cache_root}/.protoc.XXXXXX")"
    # apt-get downloads as its _apt user when it can write here, else warns.
    chmod 755 "${tmp}"
    # apt-get download writes into the current directory.
    (cd "${tmp}" && apt-get download "${PROTOC_DEBS[@]/%/=${PROTOC_DEBIAN_VERSION}}" >/dev/null) \
      || { rm -rf "${tmp}"; die "apt-get download of protoc ${PROTOC_DEBIAN_VERSION} failed (apt-get update, or install protoc ${PROTOC_VERSION} on PATH)"; }
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
