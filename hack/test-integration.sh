#!/usr/bin/env bash
# Integration tests: test/integration, each package against a real
# kube-apiserver and an embedded etcd (test/integration/framework). The
# Helm chart's test (test/integration/helm) drives the helm command that
# hack/tools/helm pins, built here into _output/bin (NODEPLUG_HELM).
# Extra arguments go to go test.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/helm.sh"
cd "${NODEPLUG_ROOT}"
hack/install-deps.sh
np::helm::build
export NODEPLUG_HELM=${BIN_DIR}/helm
go test -count=1 -timeout 30m "$@" ./test/integration/...
