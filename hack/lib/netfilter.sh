#!/usr/bin/env bash
# iptables bookkeeping for the local cluster. local-up records which rules
# and chains exist before anything starts; local-down removes the ones that
# the kubelet, kube-proxy and the CNI plugins added since (chains named
# KUBE-* or CNI-*, and the rules that jump to them), and nothing else.

NETFILTER_TABLES=(filter nat mangle raw)

# np::netfilter::commands prints the iptables commands to look at: the
# default ones, and the legacy ones too where the default is nf_tables
# (kube-proxy and the kubelet probe both backends).
np::netfilter::commands() {
  echo iptables ip6tables
  if iptables --version 2>/dev/null | grep -q nf_tables && command -v iptables-legacy >/dev/null; then
    echo iptables-legacy ip6tables-legacy
  fi
}

# np::netfilter::rules prints every chain and rule of those commands, one
# per line, as "<command> <table> <iptables -S line>".
np::netfilter::rules() {
  local bin t
  for bin in $(np::netfilter::commands); do
    command -v "${bin}" >/dev/null || continue
    for t in "${NETFILTER_TABLES[@]}"; do
      "${bin}" -w 5 -t "${t}" -S 2>/dev/null | sed "s|^|${bin} ${t} |" || true
    done
  done
}

# np::netfilter::snapshot FILE records the rules present now.
np::netfilter::snapshot() { np::netfilter::rules >"$1"; }

# np::netfilter::added BEFORE prints the KUBE-*/CNI-* chains and rules that
# are present now but were not in the snapshot BEFORE.
np::netfilter::added() {
  np::netfilter::rules | grep -vxF -f "$1" | grep -E ' (-N|-A|-j|-g) (KUBE|CNI)-' || true
}

# np::netfilter::cleanup BEFORE removes what np::netfilter::added prints:
# first the rules added to chains that existed before (builtin chains such
# as INPUT), then the new chains, flushed before any is deleted because
# they jump to each other.
np::netfilter::cleanup() {
  local before=$1 bin t verb chain rest line
  if [[ ! -f "${before}" ]]; then
    np::warn "no iptables snapshot (${before}); leaving iptables as it is"
    return 0
  fi
  local added new_chains=()
  added=$(np::netfilter::added "${before}")
  while read -r bin t verb chain rest; do
    [[ -n "${bin}" ]] || continue
    case "${verb}" in
    -N) new_chains+=("${bin} ${t} ${chain}") ;;
    -A)
      grep -qxF "${bin} ${t} -N ${chain}" <<<"${added}" && continue
      # The rest is iptables' own quoting (e.g. --comment "..."), so eval
      # splits it the way iptables printed it.
      eval "${bin} -w 5 -t ${t} -D ${chain} ${rest}" 2>/dev/null ||
        np::warn "could not delete iptables rule: ${bin} -t ${t} -A ${chain} ${rest}"
      ;;
    esac
  done <<<"${added}"
  for line in "${new_chains[@]}"; do
    read -r bin t chain <<<"${line}"
    "${bin}" -w 5 -t "${t}" -F "${chain}" 2>/dev/null || true
  done
  for line in "${new_chains[@]}"; do
    read -r bin t chain <<<"${line}"
    "${bin}" -w 5 -t "${t}" -X "${chain}" 2>/dev/null ||
      np::warn "could not delete iptables chain ${chain} (table ${t}, ${bin})"
  done
}
