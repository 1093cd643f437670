# shellcheck shell=bash
# The version of the checkout, for the binaries' stamps, the images and the release. Source it
# after common.sh; it sets, unless already set in the environment:
#   VERSION             the newest v* tag reachable (git describe), else
#                       v0.0.0-YYYYMMDDHHMMSS-SHA12 from the commit; "-dirty" when the tree has
#                       uncommitted changes
#   GIT_COMMIT          the commit's full hash
#   SOURCE_DATE_EPOCH   the commit's time (seconds): every timestamp of a build, so two builds
#                       of one commit are the same bytes
#   BUILD_DATE          SOURCE_DATE_EPOCH in RFC 3339
#   SOURCE_URL          where the source lives (org.opencontainers.image.source)

sandbox_version_vars() {
  local root="$1"
  GIT_COMMIT="${GIT_COMMIT:-$(git -C "${root}" rev-parse HEAD)}"
  SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "${root}" log -1 --format=%ct "${GIT_COMMIT}")}"
  BUILD_DATE="$(date -u -d "@${SOURCE_DATE_EPOCH}" +%Y-%m-%dT%H:%M:%SZ)"
  if [[ -z "${VERSION:-}" ]]; then
    VERSION="$(git -C "${root}" describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || true)"
    if [[ -z "${VERSION}" ]]; then
      VERSION="v0.0.0-$(date -u -d "@${SOURCE_DATE_EPOCH}" +%Y%m%d%H%M%S)-${GIT_COMMIT:0:12}"
      [[ -z "$(git -C "${root}" status --porcelain --untracked-files=no)" ]] || VERSION+="-dirty"
    fi
  fi
  SOURCE_URL="${SOURCE_URL:-https://$(cd "${root}" && go list -m)}"
  export VERSION GIT_COMMIT SOURCE_DATE_EPOCH BUILD_DATE SOURCE_URL
}

# sandbox_ldflags: the -ldflags that stamp pkg/version (and strip the symbol tables).
sandbox_ldflags() {
  local pkg=github.com/sandbox-apiserver/sandbox-apiserver/pkg/version
  echo "-s -w -X ${pkg}.gitVersion=${VERSION} -X ${pkg}.gitCommit=${GIT_COMMIT} -X ${pkg}.buildDate=${BUILD_DATE}"
}
