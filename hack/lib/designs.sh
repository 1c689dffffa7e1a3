#!/usr/bin/env bash
# The nodeplug designs that can be left out of the kubelet and the
# kube-controller-manager at build time (docs/drop-in.md, "Choosing designs
# at build time"). Each has a build tag nodeplug_no_<design> that leaves it
# out; no tag builds every design.

# NP_DESIGNS: every design, in the order --version lists them.
NP_DESIGNS=(flexdiscovery mountpods pluginwatcher localpvcheck)

# np::designs::tags SET: prints the -tags value that builds exactly SET, a
# list of designs separated by spaces or commas, "all" or "none"; empty is
# "all". Exits with an error naming the designs for an unknown one.
np::designs::tags() {
  local set=${1:-all} want=() d tags=()
  set=${set//,/ }
  case "${set}" in
  all) want=("${NP_DESIGNS[@]}") ;;
  none) want=() ;;
  *)
    for d in ${set}; do
      [[ " ${NP_DESIGNS[*]} " == *" ${d} "* ]] ||
        np::die "unknown design '${d}' in NODEPLUG_DESIGNS='${1}'" \
          "name designs among: ${NP_DESIGNS[*]} (or all, none); e.g. make build DESIGNS='flexdiscovery pluginwatcher'"
      want+=("${d}")
    done
    ;;
  esac
  for d in "${NP_DESIGNS[@]}"; do
    [[ " ${want[*]} " == *" ${d} "* ]] || tags+=("nodeplug_no_${d}")
  done
  echo "${tags[*]}"
}
