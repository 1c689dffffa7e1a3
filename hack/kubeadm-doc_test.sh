#!/usr/bin/env bash
# Tests that make kubeadm-up and docs/install.md agree (part of make
# verify, about a second): kubeadm-up runs the doc's block marked
# install-kubelet as written, so the block must exist and parse as shell;
# its drop-in must start /usr/local/bin/kubelet with every variable that
# kubeadm's drop-in (as kubeadm-up lays the kubelet package out) defines or
# reads from kubeadm's files, and no other variable but its own; and the
# ClusterConfiguration kubeadm-up writes must set the controller-manager's
# nodeplug flags the way the doc's step 1 does (extraArgs, not a manifest
# edit). Each case names what broke.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
LOCAL_UP_DIR=$(mktemp -d /tmp/np-kubeadm-doc-test.XXXXXX)
trap 'rm -rf "${LOCAL_UP_DIR}"' EXIT
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"
source "${NODEPLUG_ROOT}/hack/lib/nodes.sh"
source "${NODEPLUG_ROOT}/hack/lib/kubeadm-images.sh"
source "${NODEPLUG_ROOT}/hack/lib/kubeadm.sh"
failures=0
fail() {
  np::warn "kubeadm-doc_test: $1"
  failures=$((failures + 1))
}

block=$(np::kubeadm::install_block)
bash -n <<<"${block}" || fail "the install-kubelet block of docs/install.md is not valid shell"
for want in 'install -m 0755 ' '/usr/local/bin/kubelet' 'kubelet.service.d/20-nodeplug.conf' 'systemctl enable kubelet' 'systemctl restart kubelet'; do
  grep -qF -- "${want}" <<<"${block}" || fail "the install-kubelet block lost '${want}'"
done

# The variables of kubeadm's drop-in: those it sets and those kubeadm's
# flags file and /etc/default/kubelet set (KUBELET_KUBEADM_ARGS,
# KUBELET_EXTRA_ARGS), which its ExecStart names.
mkdir -p "$(np::nodes::dir 1)/usr-local-bin"
BIN_DIR=${LOCAL_UP_DIR}/bin && mkdir -p "${BIN_DIR}" && : >"${BIN_DIR}/kubeadm"
np::kubeadm::package 1
kubeadm_vars=$(grep '^ExecStart=/' "$(np::nodes::dir 1)/systemd-lib/kubelet.service.d/10-kubeadm.conf" | grep -o '\$[A-Z_]*' | sort -u)
doc_exec=$(grep '^ExecStart=/' <<<"${block}")
[[ "${doc_exec}" == "ExecStart=/usr/local/bin/kubelet "* ]] || fail "the doc's drop-in does not start /usr/local/bin/kubelet: ${doc_exec}"
doc_vars=$(grep -o '\$[A-Z_]*' <<<"${doc_exec}" | sort -u)
missing=$(comm -23 <(echo "${kubeadm_vars}") <(echo "${doc_vars}"))
[[ -z "${missing}" ]] || fail "the doc's ExecStart drops kubeadm's $(echo ${missing})"
extra=$(comm -13 <(echo "${kubeadm_vars}") <(echo "${doc_vars}") | grep -vx '\$NODEPLUG_KUBELET_ARGS' || true)
[[ -z "${extra}" ]] || fail "the doc's ExecStart names variables nothing sets: $(echo ${extra})"
grep -q '^Environment="NODEPLUG_KUBELET_ARGS=' <<<"${block}" || fail "the doc's drop-in does not set NODEPLUG_KUBELET_ARGS"

# Step 1 of the doc and kubeadm-up's ClusterConfiguration.
KCM_EXTRA_FLAGS="--experimental-flexvolume-discovery --experimental-mount-namespace=kube-mount"
BIN_DIR=${LOCAL_UP_DIR}/bin
config=$(np::kubeadm::init_config)
for want in '- {name: experimental-flexvolume-discovery, value: "true"}' '- {name: experimental-mount-namespace, value: "kube-mount"}' \
  "imageRepository: ${KUBEADM_IMAGE_REPO}"; do
  grep -qF -- "${want}" <<<"${config}" || fail "kubeadm-up's ClusterConfiguration lacks '${want}'"
done
for want in 'name: experimental-flexvolume-discovery' 'name: experimental-mount-namespace' 'imageRepository: KREG'; do
  grep -qF -- "${want}" "${NODEPLUG_ROOT}/docs/install.md" || fail "docs/install.md's step 1 lacks '${want}'"
done

((failures == 0)) || np::die "kubeadm-doc_test: ${failures} case(s) failed" "make docs/install.md and hack/lib/kubeadm.sh agree"
np::log "kubeadm-doc_test: docs/install.md's kubelet block parses and keeps kubeadm's variables; kubeadm-up's ClusterConfiguration sets the flags as the doc does"
