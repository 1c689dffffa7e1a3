#!/usr/bin/env bash
# Prints the resident memory (RSS) of the running local cluster, per process
# local-up recorded (with all its descendants) and in total: the control
# plane; the host's containerd, kubelet and kube-proxy, and its container
# shims with their containers; with NODES > 1 each node's init (with every
# process of the node below it: shims, containers), containerd, kubelet and
# kube-proxy, and the nsenter and unshare processes that wait for them.
# Shared pages count once per process, as RSS does. docs/benchmarks.md.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"

main() {
  [[ -d "${LOCAL_UP_DIR}/pids" ]] || np::die "no local cluster in ${LOCAL_UP_DIR}" "run 'make local-up' first"
  local f pid roots=()
  for f in "${LOCAL_UP_DIR}"/pids/*; do
    pid=$(np::cluster::pid "$(basename "${f}")") || continue
    roots+=("$(basename "${f}")=${pid}")
    # The nsenter or unshare that started it and waits for it.
    pid=$(ps -o ppid= -p "${pid}" | tr -d ' ')
    [[ "$(ps -o comm= -p "${pid}")" =~ ^(nsenter|unshare)$ ]] && roots+=("$(basename "${f}")-parent=${pid}")
  done
  for pid in $(pgrep -f "containerd-shim.*-address ${CONTAINERD_SOCK}" || true); do
    roots+=("containerd-shim=${pid}")
  done
  ps -e -o pid=,ppid=,rss= | awk -v roots="${roots[*]}" '
    { parent[$1] = $2; rss[$1] = $3; kids[$2] = kids[$2] " " $1 }
    function tree(p,   n, k, i, sum) {
      if (p in seen) return 0
      seen[p] = 1; sum = rss[p]
      n = split(kids[p], k, " ")
      for (i = 1; i <= n; i++) sum += tree(k[i])
      return sum
    }
    END {
      n = split(roots, r, " ")
      for (i = 1; i <= n; i++) {
        split(r[i], a, "="); s = tree(a[2])
        by[a[1]] += s; total += s
      }
      for (name in by) printf "%-40s %7.1f MiB\n", name, by[name] / 1024
      printf "%-40s %7.1f MiB\n", "total", total / 1024
    }' | sort -k2 -n
}

main "$@"
