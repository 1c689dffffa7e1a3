# shellcheck shell=bash disable=SC2034 # its variables are read in the other files
# Argument parsing and label decoding of hack/mount-utilities-upgrade.sh:
# the flags, the NODE names, and the plugins a mount pod serves, read from
# its labels. Sourced by hack/mount-utilities-upgrade.sh (not run); the
# defaults it overwrites are set there.

mu::usage_error() {
  printf 'error: %s\n\n' "$1" >&2
  mu::usage >&2
  exit "${MU_EXIT_USAGE}"
}

# mu::set_flag FLAG VALUE validates and stores one flag's value.
mu::set_flag() {
  local flag=$1 value=$2
  case ${flag} in
    --namespace | --daemonset)
      [[ ${value} =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] ||
        mu::usage_error "${flag}: '${value}' is not a valid name"
      if [[ ${flag} == --namespace ]]; then MU_NAMESPACE=${value}; else MU_DAEMONSET=${value}; fi
      ;;
    --timeout)
      [[ ${value} =~ ^[1-9][0-9]{0,6}$ ]] ||
        mu::usage_error "--timeout: '${value}' is not a whole number of seconds greater than 0"
      MU_TIMEOUT=${value}
      ;;
  esac
}

# mu::parse_args ARGS... sets MU_NAMESPACE, MU_DAEMONSET, MU_TIMEOUT,
# MU_DRY_RUN and MU_NODES, or exits 2 (0 for --help).
mu::parse_args() {
  MU_NODES=()
  while (($# > 0)); do
    case $1 in
      -h | --help)
        mu::usage
        exit 0
        ;;
      --dry-run) MU_DRY_RUN=1 ;;
      --namespace | --daemonset | --timeout)
        (($# >= 2)) || mu::usage_error "$1 needs a value"
        mu::set_flag "$1" "$2"
        shift
        ;;
      --namespace=* | --daemonset=* | --timeout=*) mu::set_flag "${1%%=*}" "${1#*=}" ;;
      --)
        shift
        MU_NODES+=("$@")
        break
        ;;
      -*) mu::usage_error "unknown flag: $1" ;;
      *) MU_NODES+=("$1") ;;
    esac
    shift
  done
  ((${#MU_NODES[@]} > 0)) || mu::usage_error "no NODE given"
  local node
  for node in "${MU_NODES[@]}"; do
    [[ ${node} =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || mu::usage_error "'${node}' is not a valid node name"
  done
}

# mu::decode_label_name ESCAPED prints the flex driver name a label name
# stands for: each "_" and two lower-case hex digits is that byte
# (nodeplug.io_2ffuse is nodeplug.io/fuse), as pkg/mountpod writes them.
# It returns 1 for a malformed or NUL escape.
mu::decode_label_name() {
  local LC_ALL=C
  local rest=$1 out="" chunk hex
  [[ -n ${rest} ]] || return 1
  while [[ -n ${rest} ]]; do
    if [[ ${rest} == _* ]]; then
      hex=${rest:1:2}
      [[ ${hex} =~ ^[0-9a-f]{2}$ && ${hex} != 00 ]] || return 1
      printf -v chunk '%b' "\\x${hex}"
      rest=${rest:3}
    else
      chunk=${rest%%_*}
      rest=${rest:${#chunk}}
    fi
    out+=${chunk}
  done
  printf '%s\n' "${out}"
}

# mu::plugins_from_labels reads the label keys set to "true" of a mount pod,
# one a line, and prints the plugins it serves, one a line:
# "intree<TAB>kubernetes.io/<name>" or "flex<TAB><driver>". A flex key that
# does not decode is reported on stderr and skipped (the kubelet ignores it
# too).
mu::plugins_from_labels() {
  local key driver
  while IFS= read -r key; do
    case ${key} in
      mount.kubernetes.io/container) ;;
      mount.kubernetes.io/?*) printf 'intree\tkubernetes.io/%s\n' "${key#*/}" ;;
      flexvolume.mount.kubernetes.io/?*)
        if driver=$(mu::decode_label_name "${key#*/}"); then
          printf 'flex\t%s\n' "${driver}"
        else
          printf 'warning: label %s: malformed escape, ignored\n' "${key}" >&2
        fi
        ;;
    esac
  done
}
