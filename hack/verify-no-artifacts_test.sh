#!/usr/bin/env bash
# Tests hack/verify-no-artifacts.sh on throw-away git repositories: each case
# stages some files and checks the verdict (exit code) and that the message
# names exactly the offending files. hack/verify.sh runs it.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
script=${NODEPLUG_ROOT}/hack/verify-no-artifacts.sh

tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
failures=0
n=0

# new_repo NAME: creates an empty repository and cds into it.
new_repo() {
  mkdir -p "${tmp}/$1"
  cd "${tmp}/$1"
  git -c init.defaultBranch=main init -q .
}

# Fixtures. Binaries are written byte by byte: an ELF header (with the zero
# padding every ELF has), Mach-O and PE headers, and a copy of a real ELF.
elf() { printf '\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3e\x00' >"$1"; }
macho() { printf '\xcf\xfa\xed\xfe\x07\x00\x00\x01\x03\x00\x00\x00' >"$1"; }
pe() { printf 'MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00' >"$1"; }
png() { printf '\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01' >"$1"; }
script_file() { printf '#!/bin/sh\necho "hello"\n' >"$1"; chmod +x "$1"; }
# sized FILE BYTES: a text file of exactly BYTES bytes.
sized() { head -c "$2" /dev/zero | tr '\0' 'a' >"$1"; }

# expect NAME WANT_RC [NAMED_FILE...]: runs the script on the current
# repository; WANT_RC is 0 or 1, and each NAMED_FILE must be named in the
# message as "  FILE: ", and nothing else may be.
expect() {
  local name=$1 want=$2 rc=0 out f named
  shift 2
  n=$((n + 1))
  out=$("${script}" "${PWD}" 2>&1) || rc=$?
  local ok=1
  if ((rc != want)); then
    ok=0
    np::warn "case ${name}: exit ${rc}, want ${want}"
  fi
  for f in "$@"; do
    grep -qF -- "  ${f}: " <<<"${out}" || { ok=0; np::warn "case ${name}: the message does not name ${f}"; }
  done
  named=$(grep -c '^  ' <<<"${out}" || true)
  if ((named != $#)); then
    ok=0
    np::warn "case ${name}: the message names ${named} files, want $#"
  fi
  if ((ok == 0)); then
    failures=$((failures + 1))
    printf '%s\n' "${out}" | sed 's/^/    | /' >&2
  fi
}

new_repo clean
echo text >README.md
script_file run.sh
mkdir -p docs && png docs/logo.png
sized exactly-1MiB.txt $((1024 * 1024))
ln -s run.sh link.sh
mkdir -p cmd/tool pkg/lib/testdata/gen && printf 'package main\n\nfunc main() {}\n' >cmd/tool/main.go
printf 'package main\n' >pkg/lib/testdata/gen/main.go
printf 'package main\n' >pkg/lib/main_test.go
printf '/_output/\n/tool\n/cmd/tool/tool\n' >.gitignore
git add .
sized untracked-big.txt $((2 * 1024 * 1024))
elf untracked.elf
expect "text, an executable script, a 1 MiB file, an image, a symlink, an ignored main package; untracked big file and ELF" 0

new_repo not-ignored
mkdir -p cmd/tool hack/gen && printf 'package main\n\nfunc main() {}\n' >cmd/tool/main.go
printf '// Command gen.\npackage main\n' >hack/gen/gen.go
printf '/_output/\n/gen\n/hack/gen/gen\n' >.gitignore
git add .
expect "a main package whose go build outputs .gitignore does not cover" 1 tool cmd/tool/tool

new_repo big
echo text >README.md
sized big.txt $((1024 * 1024 + 1))
git add .
expect "a file one byte over 1 MiB" 1 big.txt

new_repo elf
elf kubelet
mkdir -p "cmd/my tool" && elf "cmd/my tool/my tool" && chmod +x "cmd/my tool/my tool"
git add .
expect "ELF files with and without the executable bit, one with spaces in its path" 1 kubelet "cmd/my tool/my tool"

if [[ -f /bin/true ]]; then
  new_repo real-elf
  cp /bin/true true-copy
  git add .
  expect "a copy of /bin/true" 1 true-copy
fi

new_repo other-binaries
macho mkimage.darwin
pe etcd.exe
printf 'garbage\x00more\n' >blob && chmod +x blob
git add .
expect "Mach-O, PE, and an executable file with NUL bytes" 1 mkimage.darwin etcd.exe blob

new_repo untracked-again
elf local-volume-provisioner
echo text >README.md
git add .
git rm -q --cached local-volume-provisioner
expect "a binary removed from the index with git rm --cached" 0

new_repo everything
sized big.txt $((3 * 1024 * 1024))
elf pause
script_file ok.sh
git add .
expect "every offender is named in one run" 1 big.txt pause

cd "${NODEPLUG_ROOT}"
if ((failures > 0)); then
  np::die "verify-no-artifacts_test: ${failures} of ${n} cases failed"
fi
np::log "verify-no-artifacts_test: ${n} cases passed"
