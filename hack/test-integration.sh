#!/usr/bin/env bash
# Integration tests: test/integration, each package against a real
# kube-apiserver and an embedded etcd (test/integration/framework).
# Extra arguments go to go test.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${NODEPLUG_ROOT}"
hack/install-deps.sh
go test -count=1 -timeout 30m "$@" ./test/integration/...
