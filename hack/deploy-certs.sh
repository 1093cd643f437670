#!/usr/bin/env bash
# Certificates for deploying sandbox-apiserver from artifacts/deploy/, and the
# manifests rendered with them.
#
# Usage: hack/deploy-certs.sh [--renew] OUT_DIR
#
# Makes, with hack/localplane/certs (the local plane's certificates too), into OUT_DIR/certs/:
#   ca.crt, ca.key            a CA (kept and reused on later runs: it is the
#                             caBundle of the APIServices)
#   serving.crt, serving.key  the serving certificate of sandbox-apiserver for
#                             sandbox-apiserver.sandbox-system.svc and
#                             sandbox-apiserver.sandbox-system.svc.CLUSTER_DOMAIN,
#                             signed by ca.crt; remade when missing, when it no
#                             longer verifies against ca.crt, when it expires
#                             within 30 days, or with --renew
#   etcd-ca.{crt,key}         the etcd CA (kept and reused like ca.crt)
#   etcd-peer.{crt,key}       the certificate every etcd member serves clients
#                             and peers with and dials its peers with
#   etcd-client.{crt,key}     sandbox-apiserver's client certificate for etcd
#                             (see "etcd" in docs/operating.md)
#
# and renders artifacts/deploy/*.yaml into OUT_DIR/manifests/, numbered in the
# order they apply (namespace, service account, RBAC, Secrets, etcd, server,
# Service, APIServices), so that
#   kubectl apply -f OUT_DIR/manifests/
# installs everything on a fresh cluster:
#   - apiservices.yaml with caBundle set to ca.crt,
#   - deployment.yaml with the image set to $IMAGE (when IMAGE is set),
#   - a Secret manifest sandbox-apiserver-serving-cert (type kubernetes.io/tls)
#     holding serving.crt and serving.key, and the Secrets sandbox-etcd-tls and
#     sandbox-apiserver-etcd-client (ca.crt, tls.crt, tls.key each).
# The Secret manifests hold private keys: OUT_DIR is created private (mode 700).
#
# Environment:
#   IMAGE           sandbox-apiserver image for the Deployment (default: keep
#                   the placeholder of artifacts/deploy/deployment.yaml)
#   CLUSTER_DOMAIN  the cluster's DNS domain [cluster.local]
#   CA_DAYS         validity of a new CA in days [3650]
#   CERT_DAYS       validity of a new serving or etcd certificate in days [365]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"

NAMESPACE="sandbox-system"
SERVICE="sandbox-apiserver"
SECRET="sandbox-apiserver-serving-cert"
ETCD_PEER_SERVICE="sandbox-etcd-peer"
ETCD_SERVICE="sandbox-etcd"
# base64 of "CA-BUNDLE-PLACEHOLDER", the caBundle of artifacts/deploy/apiservices.yaml.
CA_PLACEHOLDER="Q0EtQlVORExFLVBMQUNFSE9MREVS"
IMAGE_PLACEHOLDER="ghcr.io/sandbox-apiserver/sandbox-apiserver:<version>"

IMAGE="${IMAGE:-}"
CLUSTER_DOMAIN="${CLUSTER_DOMAIN:-cluster.local}"
CA_DAYS="${CA_DAYS:-3650}"
CERT_DAYS="${CERT_DAYS:-365}"

usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}" >&2
  exit 2
}

RENEW=""
OUT=""
while (($#)); do
  case "$1" in
    --renew) RENEW=1 ;;
    -h | --help) usage ;;
    -*) log "ERROR: unknown flag $1"; usage ;;
    *) [[ -z "${OUT}" ]] || usage; OUT="$1" ;;
  esac
  shift
done
[[ -n "${OUT}" ]] || usage

umask 077
mkdir -p "${OUT}"
chmod 700 "${OUT}"
OUT="$(cd "${OUT}" && pwd)"
CERTS="${OUT}/certs"
MANIFESTS="${OUT}/manifests"
mkdir -p "${CERTS}" "${MANIFESTS}"

b64() { base64 -w0 <"$1"; }
local_plane_build

# make_ca NAME CN: a CA, made once and reused.
make_ca() { local_plane cert ca "${CERTS}" "$1" "$2" "${CA_DAYS}"; }

# make_cert NAME CA CN server|client|peer SAN...: a leaf signed by CA for serving, as a client or
# both, with the DNS or IP subject alternative names SAN. Kept while it verifies against CA, has
# every SAN and is valid for 30 more days, unless --renew.
make_cert() {
  local name="$1" ca="$2" cn="$3" usage="$4"; shift 4
  local_plane ${RENEW:+-renew} cert leaf "${CERTS}" "${name}" "${ca}" "${cn}" - "${usage}" "${CERT_DAYS}" "$@"
}

# secret NAME TYPE KEY=FILE...: a Secret manifest in the namespace.
secret() {
  local name="$1" type="$2" kv; shift 2
  cat <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: ${name}
  namespace: ${NAMESPACE}
  labels:
    app.kubernetes.io/part-of: sandbox-apiserver
type: ${type}
data:
EOF
  for kv in "$@"; do
    printf '  %s: %s\n' "${kv%%=*}" "$(b64 "${kv#*=}")"
  done
}

# ---------------------------------------------------------------------------
# Certificates

svc="${SERVICE}.${NAMESPACE}.svc"
make_ca ca "sandbox-apiserver-ca"
make_cert serving ca "${svc}" server "${svc}" "${svc}.${CLUSTER_DOMAIN}"

peer="${ETCD_PEER_SERVICE}.${NAMESPACE}.svc"
client="${ETCD_SERVICE}.${NAMESPACE}.svc"
make_ca etcd-ca "sandbox-etcd-ca"
# Every member serves clients and peers and dials its peers with this one.
make_cert etcd-peer etcd-ca sandbox-etcd peer \
  "*.${peer}" "*.${peer}.${CLUSTER_DOMAIN}" "${client}" "${client}.${CLUSTER_DOMAIN}" localhost 127.0.0.1
make_cert etcd-client etcd-ca sandbox-apiserver client

# ---------------------------------------------------------------------------
# Manifests

rm -f "${MANIFESTS}"/*.yaml
ca_bundle="$(b64 "${CERTS}/ca.crt")"
render() {
  local src="${ROOT}/artifacts/deploy/$1" dst="${MANIFESTS}/$2"
  [[ -f "${src}" ]] || die "missing ${src#"${ROOT}/"}"
  sed -e "s|${CA_PLACEHOLDER}|${ca_bundle}|g" \
    ${IMAGE:+-e "s|${IMAGE_PLACEHOLDER}|${IMAGE}|g"} "${src}" >"${dst}"
}
render namespace.yaml 00-namespace.yaml
render serviceaccount.yaml 01-serviceaccount.yaml
render rbac.yaml 02-rbac.yaml
render childrenpolicy.yaml 02-childrenpolicy.yaml
secret "${SECRET}" kubernetes.io/tls \
  "tls.crt=${CERTS}/serving.crt" "tls.key=${CERTS}/serving.key" >"${MANIFESTS}/03-serving-cert-secret.yaml"
{
  secret sandbox-etcd-tls Opaque \
    "ca.crt=${CERTS}/etcd-ca.crt" "tls.crt=${CERTS}/etcd-peer.crt" "tls.key=${CERTS}/etcd-peer.key"
  echo "---"
  secret sandbox-apiserver-etcd-client Opaque \
    "ca.crt=${CERTS}/etcd-ca.crt" "tls.crt=${CERTS}/etcd-client.crt" "tls.key=${CERTS}/etcd-client.key"
} >"${MANIFESTS}/04-etcd-tls-secrets.yaml"
render etcd.yaml 10-etcd.yaml
render deployment.yaml 20-deployment.yaml
render service.yaml 21-service.yaml
render apiservices.yaml 30-apiservices.yaml

grep -q "${CA_PLACEHOLDER}" "${MANIFESTS}/30-apiservices.yaml" &&
  die "the caBundle placeholder is still in ${MANIFESTS}/30-apiservices.yaml"
if grep -qF "${IMAGE_PLACEHOLDER}" "${MANIFESTS}/20-deployment.yaml"; then
  log "NOTE: the Deployment keeps the image placeholder ${IMAGE_PLACEHOLDER}; set IMAGE=... to render it"
fi

log "rendered ${MANIFESTS}:"
for f in "${MANIFESTS}"/*.yaml; do echo "    ${f##*/}"; done >&2
cat >&2 <<EOF
Apply with:
    kubectl apply -f ${MANIFESTS}/
or make the serving Secret without the manifest:
    kubectl -n ${NAMESPACE} create secret tls ${SECRET} --cert=${CERTS}/serving.crt --key=${CERTS}/serving.key
Keep ${CERTS}/ca.key: renewing the serving certificate with it (run this script
again) leaves the APIServices' caBundle unchanged.
EOF
