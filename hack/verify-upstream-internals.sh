#!/usr/bin/env bash
# Fails when an upstream declaration that nodeplug copies or relies on
# differs, in the versions go.mod pins, from the one last reviewed: every
# entry of hack/upstream-internals.txt (explained in
# docs/upstream-internals.md) whose declaration changed, moved or is gone is
# named, with the nodeplug code to look at. Comments and layout do not
# count (hack/tools/upstreamhash). Runs the tool's unit tests first.
#
# After a version bump (hack/update-pin.sh), review each named declaration
# against nodeplug's code, fix nodeplug, then record the reviewed sources
# with hack/update-upstream-internals.sh.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${NODEPLUG_ROOT}"
go test -count=1 ./hack/tools/upstreamhash >/dev/null ||
  np::die "the tests of hack/tools/upstreamhash fail" "go test ./hack/tools/upstreamhash"
go run ./hack/tools/upstreamhash check hack/upstream-internals.txt ||
  np::die "upstream code that nodeplug copies or relies on changed (listed above)" \
    "review each against nodeplug's code (docs/upstream-internals.md), fix nodeplug, then run hack/update-upstream-internals.sh"
