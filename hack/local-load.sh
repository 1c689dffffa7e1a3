#!/usr/bin/env bash
# Pushes an image archive into the running local cluster's registry, from
# which every node's containerd pulls it (docs/local-cluster.md, "The
# registry"). IMAGE is a docker-archive (`docker save`, `podman save
# --format docker-archive`, hack/tools/mkimage) or an OCI image layout
# archive of one index (`mkimage index`, make release). NAME, if given, is
# the reference to push as (localhost:5000/team/app:1); without it the
# archive's own name is kept on the registry (docker.io/library/app:1
# becomes localhost:5000/library/app:1). Prints the reference pods use.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"

main() {
  local image=${IMAGE:-${1:-}} name=${NAME:-${2:-}} ref
  [[ -n "${image}" ]] || np::die "no image archive given" "make local-load IMAGE=path/to/image.tar [NAME=${LOCAL_REGISTRY}/team/app:1]"
  [[ -f "${image}" ]] || np::die "${image} is not a file" "give the path of an image archive (docker save, or an OCI layout tar)"
  np::cluster::alive registry || np::die "the local cluster's registry is not running" "bring the cluster up with 'make local-up'"
  if [[ -n "${name}" && "${name}" != "${LOCAL_REGISTRY}/"* ]]; then
    np::die "NAME=${name} is not on the local registry" "name it ${LOCAL_REGISTRY}/<repository>:<tag>"
  fi
  ref=$("${BIN_DIR}/oci-push" -ca "${LOCAL_UP_DIR}/pki/ca.crt" -registry "${LOCAL_REGISTRY}" "${image}" ${name:+"${name}"}) ||
    np::die "pushing ${image} failed (see above)" "see ${LOCAL_UP_DIR}/logs/registry.log"
  echo "pushed ${ref}"
  echo "pods on every node can run image: ${ref%@*}"
}

main "$@"
