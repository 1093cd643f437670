# shellcheck shell=bash
# What the chart scripts share. Source it after common.sh.

CHART_DIR="${ROOT}/artifacts/charts/sandbox-apiserver"
# shellcheck disable=SC2034 # for the scripts that source this file
DEPLOY_DIR="${ROOT}/artifacts/deploy"
DEPLOY_NAMESPACE="sandbox-system"
DEPLOY_VALUES="${ROOT}/hack/deploy-values.yaml"
# The chart's templates rendered into artifacts/deploy, each to the file of its name.
DEPLOY_TEMPLATES=(namespace serviceaccount rbac childrenpolicy etcd deployment service apiservices)

# helm_bin: the helm hack/build-tools.sh links into _output/tools/bin.
helm_bin() {
  local helm="${ROOT}/_output/tools/bin/helm"
  [[ -x "${helm}" ]] || die "${helm#"${ROOT}/"} missing: run make tools"
  echo "${helm}"
}

# render_deploy OUT [HELM_ARGS...]: artifacts/deploy's files, rendered from the chart into OUT
# with hack/deploy-values.yaml and HELM_ARGS.
render_deploy() {
  local out="$1" helm name tmp; shift
  helm="$(helm_bin)"
  tmp="$(mktemp -d)"
  "${helm}" template sandbox-apiserver "${CHART_DIR}" --namespace "${DEPLOY_NAMESPACE}" \
    -f "${DEPLOY_VALUES}" "$@" --output-dir "${tmp}" >/dev/null || { rm -rf "${tmp}"; die "helm template failed"; }
  mkdir -p "${out}"
  for name in "${DEPLOY_TEMPLATES[@]}"; do
    {
      echo "# Rendered from artifacts/charts/sandbox-apiserver by hack/update-deploy.sh: edit the chart, not this file."
      echo "# The image tag, the APIServices' caBundle and the certificate Secrets are left to hack/deploy-certs.sh"
      echo "# (docs/operating.md, \"Install from the plain manifests\")."
      # helm's "# Source:" line names a path inside its output directory; drop it.
      grep -v '^# Source: ' "${tmp}/sandbox-apiserver/templates/${name}.yaml"
    } >"${out}/${name}.yaml"
  done
  rm -rf "${tmp}"
}
