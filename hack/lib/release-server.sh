#!/usr/bin/env bash
# The release's kube-controller-manager image (build/kube-controller-manager)
# and the per-architecture kubernetes-server-linux-<arch>.tar.gz in the
# layout of upstream's server tarball, the one `kind build node-image --type
# file` reads; both left out with RELEASE_ONLY=small. Sourced by
# hack/lib/release.sh; docs/release.md says what each holds.

# The repository of the kube-controller-manager image in the server
# tarball: upstream's, with the architecture suffix upstream's server
# tarball has (kind drops the suffix when it loads the archive), so that
# kubeadm, which asks for registry.k8s.io/kube-controller-manager:<version>,
# finds it loaded and pulls nothing.
NP_RELEASE_KIND_KCM_REPO=registry.k8s.io/kube-controller-manager

# np::release::kcm_platform_image ARCH BUILD WORK NAME OUT: OUT, the
# docker-archive of build/kube-controller-manager's image for ARCH from
# BUILD/ARCH/kube-controller-manager, named NAME. On the host's
# architecture the binary is linked as make build links it (cgo, glibc):
# its libraries and loader, as ldd finds them, go in with it.
np::release::kcm_platform_image() {
  local arch=$1 build=$2 work=$3 name=$4 out=$5 args libs=() found
  mapfile -t args < <(BIN_DIR=${build}/${arch} np::images::recipe kube-controller-manager)
  if [[ "${arch}" == "$(go env GOHOSTARCH)" ]]; then
    found=$(np::images::library_args "${build}/${arch}/kube-controller-manager") ||
      np::die "the libraries of the ${arch} kube-controller-manager are missing" "see build/kube-controller-manager/README.md"
    [[ -z "${found}" ]] || mapfile -t libs <<<"${found}"
  fi
  "${work}/mkimage" -arch "${arch}" -o "${out}" "${args[@]}" "${libs[@]}" -name "${name}" ||
    np::die "building the ${arch} kube-controller-manager image failed" "see build/kube-controller-manager/README.md"
}

# np::release::kcm_image VERSION BUILD OUT WORK:
# OUT/images/kube-controller-manager-VERSION.oci.tar, one index of every
# architecture's image; and, for the server tarballs, each architecture's
# image as a docker-archive named as upstream's server tarball names it
# (WORK/kube-controller-manager-ARCH.kind.tar).
np::release::kcm_image() {
  local version=$1 build=$2 out=$3 work=$4 arch tars=()
  for arch in "${NP_RELEASE_ARCHES[@]}"; do
    np::release::kcm_platform_image "${arch}" "${build}" "${work}" \
      "$(np::release::image_ref kube-controller-manager "${version}")" "${work}/kube-controller-manager-${arch}.tar"
    tars+=("${work}/kube-controller-manager-${arch}.tar")
    np::release::kcm_platform_image "${arch}" "${build}" "${work}" \
      "${NP_RELEASE_KIND_KCM_REPO}-${arch}:${KUBE_VERSION}" "${work}/kube-controller-manager-${arch}.kind.tar"
  done
  "${work}/mkimage" index -o "${out}/images/kube-controller-manager-${version}.oci.tar" \
    -name "$(np::release::image_ref kube-controller-manager "${version}")" "${tars[@]}" ||
    np::die "writing the OCI index of kube-controller-manager failed"
}

# np::release::server_tarball ARCH VERSION BUILD OUT WORK:
# OUT/kubernetes-server-linux-ARCH.tar.gz: kubernetes/version (upstream's
# version, which kind reads), kubernetes/nodeplug-version,
# kubernetes/server/bin/ with nodeplug's kubelet and kube-controller-manager
# of ARCH, the image kube-controller-manager.tar (np::release::kcm_image) and
# its .docker_tag. Files and directories only: kind's extractor writes
# nothing else.
np::release::server_tarball() {
  local arch=$1 version=$2 build=$3 out=$4 work=$5 root bin
  root=${work}/server-${arch}
  bin=${root}/kubernetes/server/bin
  rm -rf "${root}" && mkdir -p "${bin}"
  cp "${build}/${arch}/kubelet" "${build}/${arch}/kube-controller-manager" "${bin}/"
  cp "${work}/kube-controller-manager-${arch}.kind.tar" "${bin}/kube-controller-manager.tar"
  echo "${KUBE_VERSION}" >"${bin}/kube-controller-manager.docker_tag"
  echo "${KUBE_VERSION}" >"${root}/kubernetes/version"
  echo "${version}" >"${root}/kubernetes/nodeplug-version"
  chmod 0755 "${bin}/kubelet" "${bin}/kube-controller-manager"
  np::release::tar_gz "${root}" kubernetes "${out}/kubernetes-server-linux-${arch}.tar.gz"
}

# np::release::check_server_tarball TGZ ARCH: TGZ is in the layout kind's
# file source reads, for ARCH: only files and directories, all under
# kubernetes/; kubernetes/version a version kind parses; server/bin's
# kubelet and kube-controller-manager ELF files of ARCH; the image archive
# kube-controller-manager.tar tagged <upstream repository>-ARCH:<version>
# (its .docker_tag the same version), for ARCH, holding that same
# kube-controller-manager binary.
np::release::check_server_tarball() (
  local tgz=$1 arch=$2 tmp name list v bin machine got
  name=${tgz##*/}
  tmp=$(mktemp -d)
  trap 'rm -rf "${tmp}"' EXIT
  list=$(tar -tvzf "${tgz}") || np::die "${name} is unreadable"
  got=$(awk '$1 !~ /^[-d]/' <<<"${list}")
  [[ -z "${got}" ]] || np::die "${name} holds entries other than files and directories (kind writes each as an empty file):"$'\n'"${got}"
  got=$(tar -tzf "${tgz}" | grep -v '^kubernetes/') && np::die "${name} holds entries outside kubernetes/:"$'\n'"${got}"
  tar -C "${tmp}" -xzf "${tgz}" || np::die "${name} is unreadable"
  v=$(cat "${tmp}/kubernetes/version" 2>/dev/null) || np::die "${name} has no kubernetes/version (kind reads the version there)"
  [[ "${v}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || np::die "${name}: kubernetes/version is '${v}', not a version kind parses"
  bin=${tmp}/kubernetes/server/bin
  machine=$(np::release::elf_machine "${arch}") || exit 1
  for got in kubelet kube-controller-manager; do
    [[ -f "${bin}/${got}" ]] || np::die "${name} has no kubernetes/server/bin/${got}"
    [[ "$(readelf -h "${bin}/${got}" 2>/dev/null | sed -n 's/^ *Machine: *//p')" == "${machine}" ]] ||
      np::die "${name}: kubernetes/server/bin/${got} is not an ELF for ${arch} (${machine})"
  done
  [[ "$(cat "${bin}/kube-controller-manager.docker_tag" 2>/dev/null)" == "${v}" ]] ||
    np::die "${name}: kubernetes/server/bin/kube-controller-manager.docker_tag is not the version ${v}"
  np::release::check_kind_image "${bin}/kube-controller-manager.tar" "${tmp}/image" \
    "${NP_RELEASE_KIND_KCM_REPO}-${arch}:${v}" "${arch}" "${bin}/kube-controller-manager" ||
    np::die "${name}: kubernetes/server/bin/kube-controller-manager.tar is not the image kind loads (above)"
)

# np::release::check_kind_image ARCHIVE DIR REF ARCH BINARY: the
# docker-archive ARCHIVE (unpacked in DIR) is one image tagged REF, for
# ARCH, whose usr/local/bin/kube-controller-manager is BINARY.
np::release::check_kind_image() {
  local archive=$1 dir=$2 ref=$3 arch=$4 binary=$5 got layer
  mkdir -p "${dir}" && tar -C "${dir}" -xf "${archive}" || { np::warn "${archive##*/} is not a tar archive"; return 1; }
  got=$(jq -r '[.[].RepoTags[]] | join(" ")' "${dir}/manifest.json" 2>/dev/null)
  [[ "${got}" == "${ref}" ]] || { np::warn "the image is tagged '${got}', want '${ref}' (what kubeadm asks for, less kind's suffix)"; return 1; }
  got=$(jq -r '.architecture' "${dir}/$(jq -r '.[0].Config' "${dir}/manifest.json")")
  [[ "${got}" == "${arch}" ]] || { np::warn "the image is for '${got}', want '${arch}'"; return 1; }
  for layer in $(jq -r '.[0].Layers[]' "${dir}/manifest.json"); do
    tar -xOf "${dir}/${layer}" usr/local/bin/kube-controller-manager 2>/dev/null | cmp -s - "${binary}" && return 0
  done
  np::warn "the image's /usr/local/bin/kube-controller-manager is not kubernetes/server/bin/kube-controller-manager"
  return 1
}
