#!/usr/bin/env bash
# The build-time choice of nodeplug designs (docs/drop-in.md, "Choosing
# designs at build time"):
# - built with no design (every nodeplug_no_* tag), the kubelet and the
#   kube-controller-manager accept exactly the flags of upstream's commands
#   from the pinned module, with the same types, defaults and usage
#   (TestDropInFlagSet and TestDesignFlags of cmd/kubelet/app and
#   cmd/kube-controller-manager/app; make test runs them on the default
#   build, where the difference must be exactly the designs' flags);
# - every other subset of designs compiles (go build of the two app
#   packages, no link). Their test files compile in the default build
#   (make test) or in the no-design build above.
# go vet per subset would check test files too, but it analyses every
# dependency again for each set of tags: about 2 minutes a subset on 2
# busy cores, against seconds for go build.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/designs.sh"
cd "${NODEPLUG_ROOT}"

rc=0
started=${SECONDS}
none=$(np::designs::tags none)
np::log "designs: no design compiled in (tags ${none}): exactly upstream's flags"
go test -count=1 -tags "${none}" -run 'TestDropInFlagSet|TestDesignFlags' \
  ./cmd/kubelet/app ./cmd/kube-controller-manager/app || rc=1

# Every subset but all (go vet ./... in make verify) and none (above).
n=${#NP_DESIGNS[@]}
for ((mask = 1; mask < (1 << n) - 1; mask++)); do
  set=()
  for ((i = 0; i < n; i++)); do
    ((mask & (1 << i))) && set+=("${NP_DESIGNS[i]}")
  done
  tags=$(np::designs::tags "${set[*]}")
  np::log "designs: ${set[*]} (tags ${tags}) compiles"
  go build -tags "${tags}" ./cmd/kubelet/app ./cmd/kube-controller-manager/app || rc=1
done
if ((rc != 0)); then
  np::warn "a choice of designs fails (above); each design's files and its nodeplug_no_<design> stub must build in every combination (docs/drop-in.md)"
fi
np::log "designs: checked in $((SECONDS - started)) s"
exit "${rc}"
