#!/usr/bin/env bash
# Checks that go.mod's replace block is exactly what hack/update-pin.sh
# generates for the pinned k8s.io/kubernetes version.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/pin.sh"
cd "${NODEPLUG_ROOT}"
want=$(np::pin::expected "${KUBE_VERSION}")
got=$(go mod edit -json | python3 -c '
import json, sys
m = json.load(sys.stdin)
for r in m.get("Replace") or []:
    if r["Old"]["Path"].startswith("k8s.io/"):
        print(r["Old"]["Path"], r["New"]["Path"], r["New"].get("Version", ""))' | sort)
if [[ "${got}" != "${want}" ]]; then
  diff <(echo "${want}") <(echo "${got}") || true
  np::die "go.mod's replace block does not match k8s.io/kubernetes ${KUBE_VERSION}" "run hack/update-pin.sh"
fi
np::log "go.mod pin is consistent (k8s.io/kubernetes ${KUBE_VERSION})"
