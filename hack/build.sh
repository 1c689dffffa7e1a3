#!/usr/bin/env bash
# Builds every binary into _output/bin.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/build.sh"
np::build::all
