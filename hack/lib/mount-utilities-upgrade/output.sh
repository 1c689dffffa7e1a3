# shellcheck shell=bash
# Output, timing and the end of a run for hack/mount-utilities-upgrade.sh:
# the "[NODE] ..." lines, step and node times, deadlines, the summary, and
# the exits on failure and on an interrupt. Sourced by
# hack/mount-utilities-upgrade.sh (not run).

MU_NODE=""
MU_NODE_T0=0
MU_STEP=""
MU_STEP_T0=0
MU_NODE_STEPS=()

mu::say() { printf '[%s] %s\n' "${MU_NODE}" "$*"; }
mu::warn() { printf '[%s] warning: %s\n' "${MU_NODE}" "$*" >&2; }

# mu::now_us prints the time in microseconds.
mu::now_us() {
  if [[ -n ${EPOCHREALTIME:-} ]]; then
    local t=${EPOCHREALTIME//[!0-9]/}
    printf '%s\n' "$((10#${t}))"
  else
    printf '%s\n' "$(($(date +%s%N) / 1000))"
  fi
}

# mu::fmt_s MICROSECONDS prints seconds with one decimal.
mu::fmt_s() {
  local tenths=$((($1 + 50000) / 100000))
  printf '%d.%d' $((tenths / 10)) $((tenths % 10))
}

mu::step_start() {
  MU_STEP=$1
  MU_STEP_T0=$(mu::now_us)
}

# mu::step_done prints "[NODE] STEP: S s" and keeps it for the summary.
mu::step_done() {
  local now s
  now=$(mu::now_us)
  s=$(mu::fmt_s $((now - MU_STEP_T0)))
  mu::say "${MU_STEP}: ${s} s"
  MU_NODE_STEPS+=("${MU_STEP} ${s} s")
  MU_STEP=""
}

# mu::record RESULT adds the node's summary line.
mu::record() {
  local now steps=""
  now=$(mu::now_us)
  if ((${#MU_NODE_STEPS[@]} > 0)); then
    steps=$(printf '%s, ' "${MU_NODE_STEPS[@]}")
    steps=" (${steps%, })"
  fi
  MU_SUMMARY+=("[${MU_NODE}] $1: $(mu::fmt_s $((now - MU_NODE_T0))) s${steps}")
}

# mu::finish CODE prints the summary and exits with CODE.
mu::finish() {
  if ((${#MU_SUMMARY[@]} > 0)); then
    printf 'summary:\n'
    printf '  %s\n' "${MU_SUMMARY[@]}"
  fi
  exit "$1"
}

# mu::fail CODE MESSAGE [HINT] ends the run: the node's summary says why.
mu::fail() {
  local code=$1
  printf '[%s] error: %s\n' "${MU_NODE:-?}" "$2" >&2
  [[ -z ${3:-} ]] || printf '[%s] hint: %s\n' "${MU_NODE:-?}" "$3" >&2
  local what=failed
  ((code != MU_EXIT_REFUSED)) || what=refused
  ((code != MU_EXIT_TIMEOUT)) || what="timed out"
  [[ -z ${MU_NODE} ]] || mu::record "${what} (exit ${code})${MU_STEP:+ in ${MU_STEP}}"
  mu::finish "${code}"
}

mu::interrupted() {
  trap - INT TERM
  if [[ -n ${MU_NODE} ]]; then
    printf '[%s] interrupted%s. If the node is tainted %s, run the script again to finish (it resumes), or untaint by hand: %s taint nodes %s %s:%s-\n' \
      "${MU_NODE}" "${MU_STEP:+ in ${MU_STEP}}" "${MU_TAINT_KEY}" "${KUBECTL}" "${MU_NODE}" "${MU_TAINT_KEY}" "${MU_TAINT_EFFECT}" >&2
    mu::record "interrupted${MU_STEP:+ in ${MU_STEP}}"
  fi
  mu::finish 130
}

mu::deadline() { printf '%s\n' "$(($(mu::now_us) + MU_TIMEOUT * 1000000))"; }
mu::past() { (($(mu::now_us) >= $1)); }
