#!/usr/bin/env bash
# Fails when git tracks a build output: a file over 1 MiB, or an executable
# binary (ELF, Mach-O or PE by its magic, or a file with the executable bit
# and a NUL byte in its first 8 KiB). Executable scripts are text and pass.
# It checks what the index holds (what the next commit records) and names
# every offending file. It also fails when .gitignore does not cover the
# output of `go build` for a main package, so that a new command cannot be
# committed by accident the way local-volume-provisioner once was.
#
# Usage: hack/verify-no-artifacts.sh [REPO_DIR]   (default: this repository)
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
repo=${1:-${NODEPLUG_ROOT}}
MAX_BYTES=$((1024 * 1024))
HEAD_BYTES=8192

# Regular files of the index: mode, object and path ("<mode> <object>
# <stage>\t<path>"). Symlinks (120000) hold a path and submodules (160000)
# a commit; neither can be a build output.
modes=() objs=() paths=()
while IFS= read -r -d '' entry; do
  read -r mode obj _ <<<"${entry%%$'\t'*}"
  [[ ${mode} == 100644 || ${mode} == 100755 ]] || continue
  modes+=("${mode}") objs+=("${obj}") paths+=("${entry#*$'\t'}")
done < <(git -C "${repo}" ls-files --stage -z)
((${#objs[@]} > 0)) || { np::log "verify-no-artifacts: no tracked files"; exit 0; }

# One git process for every size, one for the files that hold a NUL byte
# anywhere: every binary executable does (ELF, Mach-O and PE headers all
# hold zero bytes), and text never does. Only those files are read below,
# so the check takes a fraction of a second. git grep -a ignores
# .gitattributes (a "diff" attribute cannot pass a binary off as text); if
# this git has no PCRE (exit 128), every file is read instead.
mapfile -t sizes < <(printf '%s\n' "${objs[@]}" | git -C "${repo}" cat-file --batch-check='%(objectsize)')
nul_list=$(mktemp) head_file=$(mktemp)
trap 'rm -f "${nul_list}" "${head_file}"' EXIT
declare -A has_nul=()
rc=0
LC_ALL=C git -C "${repo}" grep --cached -a -l -z -P '\x00' >"${nul_list}" || rc=$?
case ${rc} in
  0) while IFS= read -r -d '' path; do has_nul[${path}]=1; done <"${nul_list}" ;;
  1) ;;
  *) np::warn "git grep -P failed (exit ${rc}); reading every tracked file"
     for path in "${paths[@]}"; do has_nul[${path}]=1; done ;;
esac

# verdict MODE OBJECT PATH: prints why PATH must not be tracked, or nothing.
verdict() {
  local mode=$1 obj=$2 path=$3 magic total nonnul
  { git -C "${repo}" cat-file blob "${obj}" || true; } | head -c "${HEAD_BYTES}" >"${head_file}"
  magic=$(od -An -tx1 -N4 "${head_file}" | tr -d ' \n')
  case ${magic} in
    7f454c46) echo "${path}: an ELF binary"; return ;;
    feedface | feedfacf | cefaedfe | cffaedfe | cafebabe) echo "${path}: a Mach-O binary"; return ;;
  esac
  total=$(wc -c <"${head_file}")
  nonnul=$(tr -d '\000' <"${head_file}" | wc -c)
  ((nonnul == total)) && return
  if [[ ${magic} == 4d5a* ]]; then
    echo "${path}: a PE (Windows) binary"
  elif [[ ${mode} == 100755 ]]; then
    echo "${path}: an executable binary (executable bit, NUL bytes in its first ${HEAD_BYTES} bytes)"
  fi
}

bad=()
for i in "${!objs[@]}"; do
  if ((sizes[i] > MAX_BYTES)); then
    bad+=("${paths[i]}: ${sizes[i]} bytes, over the 1 MiB limit for a tracked file")
  elif [[ -n ${has_nul[${paths[i]}]:-} ]]; then
    why=$(verdict "${modes[i]}" "${objs[i]}" "${paths[i]}")
    [[ -z ${why} ]] || bad+=("${why}")
  fi
done

# .gitignore must cover what `go build` writes for every main package: with
# DIR/BASENAME the package directory, ./BASENAME (go build ./DIR at the
# root), DIR/BASENAME (go build inside DIR) and _output/bin/BASENAME
# (hack/build.sh). One git check-ignore answers for all of them.
declare -A main_dirs=()
while IFS= read -r -d '' gofile; do
  dir=$(dirname "${gofile}")
  [[ ${gofile} == *_test.go || ${dir} == . || /${dir}/ == */testdata/* ]] || main_dirs[${dir}]=1
done < <(git -C "${repo}" grep --cached -l -z -E '^package main$' -- '*.go' || true)
outputs=()
declare -A package_of=()
for dir in "${!main_dirs[@]}"; do
  base=${dir##*/}
  for out in "${base}" "${dir}/${base}" "_output/bin/${base}"; do
    outputs+=("${out}")
    package_of[${out}]=${dir}
  done
done
if ((${#outputs[@]} > 0)); then
  declare -A ignored=()
  while IFS= read -r -d '' out; do
    ignored[${out}]=1
  done < <(printf '%s\0' "${outputs[@]}" | git -C "${repo}" check-ignore --no-index --stdin -z || true)
  for out in "${outputs[@]}"; do
    [[ -n ${ignored[${out}]:-} ]] || bad+=("${out}: a go build output (main package ${package_of[${out}]}) that .gitignore does not cover")
  done
fi

if ((${#bad[@]} > 0)); then
  np::warn "build outputs or large files are tracked by git, or not ignored:"
  printf '  %s\n' "${bad[@]}" >&2
  np::die "${#bad[@]} build output(s) or large file(s): see the list above" \
    "remove a tracked one with 'git rm --cached FILE' (a normal commit, no history rewrite), and make .gitignore cover every build output"
fi
np::log "verify-no-artifacts: ${#objs[@]} tracked files, no build output and none over 1 MiB; the go build outputs of ${#main_dirs[@]} main packages are ignored"
