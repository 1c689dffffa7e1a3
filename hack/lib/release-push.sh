#!/usr/bin/env bash
# make release RELEASE_REGISTRY=host[:port]/path (docs/release.md,
# "Pushing to a registry"): after the release is written and checked, its
# images are pushed as their multi-platform indexes to
# RELEASE_REGISTRY/NAME:VERSION and its Helm charts (local-volume-provisioner,
# mount-utilities) to oci://RELEASE_REGISTRY/charts, each packaged so that
# its image defaults to the pushed one (helm install oci://... needs no
# --set image). RELEASE_REGISTRY_CA names the CA file the registry's certificate
# is signed by (default: the system's roots). Credentials are helm's and
# the push tool's usual ones are not read: the registry must accept the
# pushes without login (the local cluster's does; see docs/release.md for
# a registry that needs one).

source "$(dirname "${BASH_SOURCE[0]}")/registry.sh"

# np::release::push OUT VERSION REGISTRY [CA]: pushes the release in OUT
# and prints each reference pushed.
np::release::push() {
  local out=$1 version=$2 registry=$3 ca=${4:-} f name ca_args=()
  [[ "${registry}" =~ ^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)*$ ]] ||
    np::die "RELEASE_REGISTRY=${registry} is not host[:port][/path] in lower case" "e.g. RELEASE_REGISTRY=registry.example.com/nodeplug"
  if [[ -n "${ca}" ]]; then
    [[ -f "${ca}" ]] || np::die "RELEASE_REGISTRY_CA=${ca} is not a file" "give the PEM file of the CA that signed the registry's certificate"
    ca_args=(-ca "${ca}")
  fi
  [[ -x "${BIN_DIR}/oci-push" ]] || np::build::registry
  shopt -s nullglob
  local images=("${out}"/images/*-"${version}".oci.tar)
  shopt -u nullglob
  ((${#images[@]} > 0)) || np::die "${out}/images holds no image of ${version}" "run make release first"
  for f in "${images[@]}"; do
    name=${f##*/}
    name=${name%-"${version}".oci.tar}
    "${BIN_DIR}/oci-push" "${ca_args[@]}" "${f}" "${registry}/${name}:${version}" ||
      np::die "pushing ${f##*/} to ${registry} failed (see above)"
  done
  np::helm::build
  for name in local-volume-provisioner mount-utilities; do
    np::registry::push_chart "${NODEPLUG_ROOT}/deploy/helm/${name}" "${version#v}" \
      "${registry}/${name}:${version}" "${registry}" "${ca}"
    echo "oci://${registry}/charts/${name}:${version#v}"
  done
}
