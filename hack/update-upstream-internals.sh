#!/usr/bin/env bash
# Records, in hack/upstream-internals.txt, the hashes of the upstream
# declarations that nodeplug copies or relies on, as the versions go.mod
# pins now declare them, so that hack/verify-upstream-internals.sh passes
# again.
#
# Run it ONLY AFTER A REVIEW: for every declaration that
# hack/verify-upstream-internals.sh names, read upstream's change, compare
# it with the nodeplug code the entry names (docs/upstream-internals.md says
# what nodeplug takes from it and why) and fix nodeplug first. Recording
# hashes without that review turns the check off for exactly the changes it
# exists to catch. A declaration that moved to another file of its package
# is followed; one that is gone must be edited in the list (and in nodeplug)
# by hand.
# Usage: hack/update-upstream-internals.sh
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${NODEPLUG_ROOT}"
# Show what is being accepted before recording it.
go run ./hack/tools/upstreamhash check hack/upstream-internals.txt || true
go run ./hack/tools/upstreamhash update hack/upstream-internals.txt
np::log "recorded: commit hack/upstream-internals.txt together with the nodeplug changes the review called for"
