#!/usr/bin/env bash
# Builds every binary into _output/bin. NODEPLUG_DESIGNS (make build
# DESIGNS=...) chooses the nodeplug designs compiled into the kubelet and
# the kube-controller-manager: all (the default), none, or some of
# flexdiscovery mountpods pluginwatcher localpvcheck; hack/lib/designs.sh turns it into
# -tags nodeplug_no_<design> for the others.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/build.sh"
np::build::all
