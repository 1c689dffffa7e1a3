#!/usr/bin/env bash
# Static checks: gofmt, go vet (root module with the e2e tag, and every
# staging module), the designs chosen at build time (hack/verify-designs.sh:
# without designs, exactly upstream's kubelet and controller-manager flags;
# every subset compiles), golangci-lint with logcheck
# (hack/verify-golangci-lint.sh, .golangci.yaml, docs/lint.md), the go.mod
# pin, no build outputs or files over 1 MiB in git (with the test of that
# check), the one generator of the nodes' kubelet and kube-proxy
# configurations (hack/node-config_test.sh), the check that the local
# cluster's directory is root's all the way up (hack/local-up-dir_test.sh),
# the checks of E2E_CLUSTER before the e2e suites run
# (hack/e2e-existing_test.sh), make kubeadm-up and docs/install.md agreeing
# (hack/kubeadm-doc_test.sh), the checks of make release on a small release
# made on the spot (hack/release_test.sh), the upstream
# code nodeplug copies or relies on unchanged since its last review
# (hack/verify-upstream-internals.sh), the Helm chart's copies of the CRD
# and the admission policy (hack/verify-helm-chart.sh), and shell syntax of
# hack/ and .ci/.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${NODEPLUG_ROOT}"
# The Debian packages the checks use, on a fresh machine too.
hack/install-deps.sh
rc=0

unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [[ -n "${unformatted}" ]]; then
  np::warn "not gofmt'ed (run gofmt -w):"$'\n'"${unformatted}"
  rc=1
fi
go vet -tags e2e ./... || rc=1
# After go vet ./..., whose build cache it reuses.
hack/verify-designs.sh || rc=1
for mod in staging/src/github.com/nodeplug/*/go.mod; do
  [[ -f "${mod}" ]] || continue
  (cd "$(dirname "${mod}")" && go vet ./...) || rc=1
done
source hack/lib/helm-chart.sh
for dir in "${NP_HELM_MODULES[@]}" hack/tools/registry; do
  (cd "${dir}" && go vet ./...) || rc=1
done
# With np::build::coredns's flags, to reuse that build's cache.
(cd hack/tools/coredns && CGO_ENABLED=0 go vet -trimpath ./...) || rc=1
hack/verify-golangci-lint.sh || rc=1
hack/verify-pin.sh || rc=1
hack/verify-no-artifacts.sh || rc=1
hack/verify-no-artifacts_test.sh || rc=1
hack/cluster-start_test.sh || rc=1
hack/node-config_test.sh || rc=1
hack/local-up-dir_test.sh || rc=1
hack/e2e-existing_test.sh || rc=1
hack/kubeadm-doc_test.sh || rc=1
hack/release_test.sh || rc=1
hack/verify-upstream-internals.sh || rc=1
hack/verify-helm-chart.sh || rc=1
for f in hack/*.sh hack/lib/*.sh hack/lib/*/*.sh .ci/run; do
  [[ -f "${f}" ]] && { bash -n "${f}" || rc=1; }
done
((rc == 0)) && np::log "verify: all checks passed"
exit "${rc}"
