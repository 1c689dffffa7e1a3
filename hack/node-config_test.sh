#!/usr/bin/env bash
# Tests hack/lib/node-config.sh: the kubelet and kube-proxy configurations
# that local-up writes for the node on the host (NODES=1) and for node 1 of
# several differ only in the fields of NP_NODECONF_PER_NODE, every one of
# which both set (cgroupRoot the nodes only), and the generator refuses a
# wrong number of arguments.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
LOCAL_UP_DIR=$(mktemp -d /tmp/np-node-config-test.XXXXXX)
trap 'rm -rf "${LOCAL_UP_DIR}"' EXIT
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"
source "${NODEPLUG_ROOT}/hack/lib/nodes.sh"

one=${LOCAL_UP_DIR}/one
node=$(np::nodes::dir 1)
mkdir -p "${one}" "${node}"
np::cluster::kube_configs "${one}"
np::nodes::kube_configs 1

fail() { np::die "node-config_test: $1" "hack/lib/node-config.sh writes both; change it there, not per path"; }

# shared FILE: the file without comments and per-node fields.
shared() {
  local pattern
  pattern="^($(
    IFS='|'
    echo "${NP_NODECONF_PER_NODE[*]}"
  )):"
  grep -v '^#' "$1" | grep -Ev "${pattern}"
}

for f in kubelet.yaml kube-proxy.yaml; do
  [[ -s "${one}/${f}" && -s "${node}/${f}" ]] || fail "${f} not written for both paths"
  if ! d=$(diff <(shared "${one}/${f}") <(shared "${node}/${f}")); then
    fail "${f} differs outside the per-node fields (< one node, > node 1):"$'\n'"${d}"
  fi
done
for field in "${NP_NODECONF_PER_NODE[@]}"; do
  n=$(cat "${node}/kubelet.yaml" "${node}/kube-proxy.yaml" | grep -c "^${field}:" || true)
  o=$(cat "${one}/kubelet.yaml" "${one}/kube-proxy.yaml" | grep -c "^${field}:" || true)
  want_one=1
  [[ "${field}" != cgroupRoot ]] || want_one=0
  ((n == 1 && o == want_one)) || fail "${field}: set ${o} times for one node (want ${want_one}), ${n} times for node 1 (want 1)"
done
grep -qx "cgroupRoot: /$(np::nodes::name 1)" "${node}/kubelet.yaml" || fail "node 1's cgroupRoot is not /$(np::nodes::name 1)"
grep -qx "volumePluginDir: ${FLEX_DIR}" "${one}/kubelet.yaml" || fail "the one node's flex dir is not ${FLEX_DIR}"
grep -qx "volumePluginDir: ${NODE_FLEX_DIR}" "${node}/kubelet.yaml" || fail "node 1's flex dir is not ${NODE_FLEX_DIR}"

# Bad input: a wrong number of arguments is an error naming the usage.
for bad in "np::nodeconf::kubelet ${one}/x a b" "np::nodeconf::kube_proxy ${one}/x a"; do
  # shellcheck disable=SC2086 # split on purpose: function and arguments
  if out=$( (${bad}) 2>&1); then
    fail "${bad%% *} accepted a wrong number of arguments"
  fi
  [[ "${out}" == *"want"* ]] || fail "${bad%% *}: no usage in the error: ${out}"
done
np::log "node-config_test: one node and N nodes differ only in the per-node fields"
