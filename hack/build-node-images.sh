#!/usr/bin/env bash
# Builds the images the local plane's real node runs, as OCI archives for `ctr images import`
# (no registry is reachable here), each cached under a key of its inputs and linked into
# _output/tools/images/:
#
#   localhost/sandbox:local  a shell (bash, dash as /bin/sh), coreutils, tar, gzip, grep, sed, hostname,
#                            findutils, procps and python3, unpacked from Debian packages (the
#                            resolver of this machine's apt picks them and their dependencies;
#                            nothing is configured or run), idling in /usr/local/bin/pause
#   localhost/noshell:local  only the static pause binary: an image without a shell
#   localhost/pause:local    the pod sandbox (pause) image containerd gives every pod
#
# hack/local-up.sh imports them and tags the sandbox image under the names the examples and
# tests use (it prints them). The pause binary is hack/image/pause; the archives are written by
# hack/image/rootfs.
#
# Environment:
#   SANDBOX_TOOLS_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/sandbox-apiserver/tools)
#   GO                   go command (default: go)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"
source "${ROOT}/hack/lib/debian.sh"

GO="${GO:-go}"
OUT_IMAGES="${ROOT}/_output/tools/images"
# Every timestamp in the images: fixed, so the same inputs give the same digests.
IMAGE_CREATED="2026-01-01T00:00:00Z"
# The sandbox image's Debian packages; apt adds their dependencies. usr-is-merged stands for the
# merged /usr this image is built with (else apt picks usrmerge, and with it perl).
SANDBOX_DEBS=(base-files usr-is-merged bash dash coreutils tar gzip grep sed findutils procps hostname python3 libc-bin)
PATH_ENV="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# sandbox_deb_files: the .deb file names (NAME_VERSION_ARCH.deb) apt would fetch to install
# SANDBOX_DEBS on an empty system, sorted. A new machine with no package lists updates them once.
sandbox_deb_files() {
  local status uris
  status="$(mktemp)"
  uris="$(apt_retry apt-get install -qq --print-uris --no-install-recommends -o Debug::NoLocking=1 \
    -o Dir::State::status="${status}" "${SANDBOX_DEBS[@]}" 2>/dev/null)" || uris=""
  rm -f "${status}"
  [[ -n "${uris}" ]] || die "images: apt cannot resolve ${SANDBOX_DEBS[*]} (apt-get update)"
  awk '{ print $2 }' <<<"${uris}" | sort
}

# build_tools_into DIR: the pause binary (static) and the archive writer.
build_tools_into() {
  (cd "${ROOT}/hack/image" && CGO_ENABLED=0 "${GO}" build -trimpath -ldflags='-s -w' -o "$1/" ./pause ./rootfs) ||
    die "images: building hack/image/pause and hack/image/rootfs failed"
}

# sandbox_rootfs DIR DEB_FILES: unpacks the packages into DIR, a merged-/usr tree, and adds what
# the packages' scripts would have made (users, /bin/sh) and the idle process.
sandbox_rootfs() {
  local dir="$1" files="$2" debs="$1.debs" deb
  mkdir -p "${dir}/usr/bin" "${dir}/usr/sbin" "${dir}/usr/lib" "${dir}/usr/lib64" "${debs}"
  ln -s usr/bin "${dir}/bin"; ln -s usr/sbin "${dir}/sbin"
  ln -s usr/lib "${dir}/lib"; ln -s usr/lib64 "${dir}/lib64"
  # apt-get download writes into the current directory (here in the tools cache, which its
  # unprivileged _apt user may not reach: it downloads as root).
  # shellcheck disable=SC2046 # one NAME=VERSION word per package
  (cd "${debs}" && apt-get download -q -o APT::Sandbox::User=root $(sed -E 's/^([^_]+)_([^_]+)_.*/\1=\2/; s/%3a/:/g' <<<"${files}") >/dev/null) ||
    { log "images: apt-get download of the sandbox image's packages failed"; return 1; }
  for deb in "${debs}"/*.deb; do
    dpkg-deb --fsys-tarfile "${deb}" | tar -x --keep-directory-symlink -C "${dir}"
  done
  rm -rf "${debs}"
  [[ -e "${dir}/bin/sh" ]] || ln -s dash "${dir}/usr/bin/sh"
  printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/bin/sh\n' >"${dir}/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\nnonroot:x:65532:\n' >"${dir}/etc/group"
  mkdir -p "${dir}/root" "${dir}/tmp" "${dir}/home/nonroot" "${dir}/usr/local/bin"
  chmod 700 "${dir}/root"; chmod 1777 "${dir}/tmp"; chown 65532:65532 "${dir}/home/nonroot"
  # Documentation and translations are of no use in a sandbox and a third of the size.
  rm -rf "${dir}/usr/share/doc" "${dir}/usr/share/man" "${dir}/usr/share/info" "${dir}/usr/share/locale"
}

# noshell_rootfs DIR: the pause binary as /pause and an empty /tmp, nothing else.
noshell_rootfs() {
  mkdir -p "$1/tmp"
  chmod 1777 "$1/tmp"
}

# image NAME KEY ROOTFS_FN CMD: builds NAME's archive into the cache directory of KEY unless it is
# there, and links it into _output/tools/images/NAME.tar.
image() {
  local name="$1" key="$2" rootfs_fn="$3" cmd="$4" dir tmp
  dir="${CACHE}/node-image-${name}-${key}"
  if [[ -s "${dir}/${name}.tar" ]]; then
    log "images: ${name}: cached"
  else
    local start=${SECONDS}
    log "images: ${name}: building"
    tmp="$(mktemp -d "${CACHE}/.node-image.XXXXXX")"
    mkdir -p "${tmp}/rootfs/usr/local/bin"
    install -m 0755 "${BIN}/pause" "${tmp}/rootfs/usr/local/bin/pause"
    "${rootfs_fn}" "${tmp}/rootfs" "${DEB_FILES}" || { rm -rf "${tmp}"; return 1; }
    "${BIN}/rootfs" --rootfs "${tmp}/rootfs" --name "localhost/${name}:local" --out "${tmp}/${name}.tar" \
      --created "${IMAGE_CREATED}" --cmd "${cmd}" --env "${PATH_ENV}" >"${tmp}/${name}.digest" ||
      die "images: ${name}: writing the archive failed"
    rm -rf "${tmp}/rootfs" "${dir}"
    mv "${tmp}" "${dir}"
    log "images: ${name}: built in $((SECONDS - start))s ($(du -h "${dir}/${name}.tar" | cut -f1))"
  fi
  ln -sfn "${dir}/${name}.tar" "${OUT_IMAGES}/${name}.tar"
}

# sandbox_key TOOLS_KEY: the sandbox image's key: the binaries', the packages' and how they are
# put together.
sandbox_key() {
  {
    echo "$1"
    echo "${DEB_FILES}"
    declare -f sandbox_rootfs
  } | digest_key
}

main() {
  CACHE="$(tools_cache)"
  mkdir -p "${CACHE}" "${OUT_IMAGES}"
  BIN="$(mktemp -d)"
  trap 'rm -rf "${BIN}"' EXIT
  build_tools_into "${BIN}"
  DEB_FILES="$(sandbox_deb_files)"
  local tools_key
  # The key of the binaries in every image: the builder's sources, pins and toolchain.
  tools_key="$({
    cat "${ROOT}"/hack/image/go.mod "${ROOT}"/hack/image/go.sum "${ROOT}"/hack/image/pause/*.go "${ROOT}"/hack/image/rootfs/*.go
    "${GO}" env GOVERSION GOARCH
  } | digest_key)"
  # Stale package lists name revisions the mirror no longer has: update them once and retry.
  if ! image sandbox "$(sandbox_key "${tools_key}")" sandbox_rootfs '["/usr/local/bin/pause"]'; then
    apt_update_once || die "images: cannot fetch the sandbox image's packages (apt-get update as root)"
    DEB_FILES="$(sandbox_deb_files)"
    image sandbox "$(sandbox_key "${tools_key}")" sandbox_rootfs '["/usr/local/bin/pause"]' ||
      die "images: apt-get download of the sandbox image's packages failed"
  fi
  image noshell "${tools_key}" noshell_rootfs '["/usr/local/bin/pause"]'
  image pause "${tools_key}" noshell_rootfs '["/usr/local/bin/pause"]'
}

main "$@"
