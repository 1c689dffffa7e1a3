#!/usr/bin/env bash
# Tests np::cluster::start's fork/exec window: a command whose exec comes
# late (here a shell function that sleeps first, so /proc/PID/cmdline shows
# the parent shell meanwhile) must be seen alive as soon as start returns.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
LOCAL_UP_DIR=$(mktemp -d /tmp/np-start-test.XXXXXX)
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"
mkdir -p "${LOCAL_UP_DIR}"/{logs,pids}
pid=""
cleanup() {
  [[ -z ${pid} ]] || kill "${pid}" 2>/dev/null || true
  rm -rf "${LOCAL_UP_DIR}"
}
trap cleanup EXIT

late_exec() {
  sleep 0.5
  exec tail -f /dev/null "${LOCAL_UP_DIR}/pids/slow"
}
np::cluster::start slow late_exec 2>/dev/null
pid=$(cat "${LOCAL_UP_DIR}/pids/slow")
np::cluster::alive slow || np::die "cluster-start_test: a process that execs late was taken for dead right after start"
np::log "cluster-start_test: a late exec is waited for"
