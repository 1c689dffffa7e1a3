#!/usr/bin/env bash
# Computes go.mod's replace block from upstream's own go.mod.

# np::pin::modules VERSION lists the staging modules upstream replaces with
# ./staging/src/k8s.io/X, minus those never published on their own.
np::pin::modules() {
  local gomod
  gomod=$(go mod download -json "k8s.io/kubernetes@$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])') ||
    np::die "cannot download k8s.io/kubernetes@$1 from the Go module proxy"
  awk '$1 ~ /^k8s\.io\// && $2 == "=>" && $3 ~ /^\.\/staging\/src\/k8s\.io\// {print $1}' "${gomod}" |
    grep -vxE 'k8s.io/(sample-cli-plugin|sample-controller)' | sort -u
}

np::pin::expected() {
  local v="v0.${1#v1.}" m
  for m in $(np::pin::modules "$1"); do echo "${m} ${m} ${v}"; done | sort
}

np::pin::write() {
  local v="v0.${1#v1.}" m args=() want
  want=$(np::pin::modules "$1")
  # Drop the k8s.io replaces upstream no longer has; -replace rewrites the
  # others where they stand, so the block stays one block and the diff shows
  # only the versions.
  for m in $(go mod edit -json | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    if r["Old"]["Path"].startswith("k8s.io/"): print(r["Old"]["Path"])'); do
    grep -qxF "${m}" <<<"${want}" || args+=(-dropreplace "${m}")
  done
  for m in ${want}; do args+=(-replace "${m}=${m}@${v}"); done
  go mod edit "${args[@]}"
}
