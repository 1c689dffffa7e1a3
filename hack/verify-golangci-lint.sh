#!/usr/bin/env bash
# Lints nodeplug with golangci-lint and logcheck (.golangci.yaml; what each
# linter checks is in docs/lint.md): the root module, with the e2e and
# integration build tags, then every staging module and the Helm chart's
# module.
#
# It installs the linter itself: hack/tools/golangci-lint is a small module
# that pins golangci-lint and sigs.k8s.io/logtools and compiles logcheck into
# golangci-lint. `go install` fetches both from the Go module proxy into
# _output/tools/bin and does nothing when the binary is up to date. Results
# are cached in _output/tools/golangci-lint-cache: a cold run takes about
# 1.5 minutes and 8 GB of memory, a warm one seconds.
#
# Usage: hack/verify-golangci-lint.sh [golangci-lint run flags]
#   e.g. --fix, or --concurrency 1 on a loaded machine.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${NODEPLUG_ROOT}"

tools_bin=${OUT_DIR}/tools/bin
golangci_lint=${tools_bin}/golangci-lint
export GOLANGCI_LINT_CACHE=${GOLANGCI_LINT_CACHE:-${OUT_DIR}/tools/golangci-lint-cache}

GOBIN=${tools_bin} go -C hack/tools/golangci-lint install . ||
  np::die "could not build golangci-lint from hack/tools/golangci-lint" \
    "check that the Go module proxy is reachable (go -C hack/tools/golangci-lint mod download)"
"${golangci_lint}" config verify --config .golangci.yaml ||
  np::die ".golangci.yaml is not a valid golangci-lint configuration" \
    "run '${golangci_lint} config verify' for details"

# Runs that overlap (two engineers, one clone) wait for each other's lock
# instead of failing.
run=("${golangci_lint}" run --allow-serial-runners)
rc=0
np::log "golangci-lint: root module (tags e2e, integration)"
"${run[@]}" "$@" ./... || rc=1
for mod in staging/src/github.com/nodeplug/*/go.mod; do
  [[ -f "${mod}" ]] || continue
  dir=$(dirname "${mod}")
  np::log "golangci-lint: ${dir}"
  (cd "${dir}" && "${run[@]}" --path-prefix "${dir}" "$@" ./...) || rc=1
done
source hack/lib/helm-chart.sh
for dir in "${NP_HELM_MODULES[@]}"; do
  np::log "golangci-lint: ${dir}"
  (cd "${dir}" && "${run[@]}" --path-prefix "${dir}" "$@" ./...) || rc=1
done
if ((rc != 0)); then
  np::warn "golangci-lint found problems (listed above). Fix them; a //nolint:<linter> needs a reason after it. See docs/lint.md."
fi
exit "${rc}"
