#!/usr/bin/env bash
# make release (hack/release.sh): per architecture, a tarball of the
# binaries an operator installs on a node or runs in the cluster; the images
# as OCI archives, one multi-platform index each; the manifests and the Helm
# charts packaged; SHA256SUMS of them all. docs/release.md says what each
# holds and how to check it.

source "$(dirname "${BASH_SOURCE[0]}")/build.sh"
source "$(dirname "${BASH_SOURCE[0]}")/images.sh"
source "$(dirname "${BASH_SOURCE[0]}")/helm.sh"
source "$(dirname "${BASH_SOURCE[0]}")/release-debs.sh"
source "$(dirname "${BASH_SOURCE[0]}")/release-server.sh"

NP_RELEASE_ARCHES=(amd64 arm64)
# The binaries of the per-architecture tarballs. The first two are heavy
# (upstream's kubelet and controller-manager): RELEASE_ONLY=small leaves
# them out.
NP_RELEASE_HEAVY=(kubelet kube-controller-manager)
NP_RELEASE_SMALL=(local-volume-provisioner flexvolume-installer mount-utilities-upgrade)
# The directories of the manifests tarball.
NP_RELEASE_MANIFESTS=(deploy/local-volume-provisioner deploy/flexvolume deploy/mount-utilities)
# The Helm charts packaged (deploy/helm/<name>, <name>-<chart version>.tgz).
NP_RELEASE_CHARTS=(local-volume-provisioner mount-utilities)

# np::release::version: RELEASE_VERSION, or v0.1.0-<commit> as the binaries
# report it (hack/lib/build.sh). A version is v<major>.<minor>.<patch> with
# an optional -suffix of letters, digits, dots and dashes.
np::release::version() {
  local v=${RELEASE_VERSION:-}
  if [[ -z "${v}" ]]; then
    v=v0.1.0-$(git -C "${NODEPLUG_ROOT}" describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
  fi
  [[ "${v}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
    np::die "release version '${v}' is not v<major>.<minor>.<patch>[-suffix]" "set RELEASE_VERSION=v1.2.3 (or v1.2.3-rc.1)"
  echo "${v}"
}

# np::release::binaries: the names of the tarballs' binaries for RELEASE_ONLY.
np::release::binaries() {
  case "${RELEASE_ONLY:-all}" in
  all) echo "${NP_RELEASE_HEAVY[@]}" "${NP_RELEASE_SMALL[@]}" ;;
  small) echo "${NP_RELEASE_SMALL[@]}" ;;
  *) np::die "RELEASE_ONLY='${RELEASE_ONLY}' is neither all nor small" "unset RELEASE_ONLY, or set it to small (no kubelet or kube-controller-manager)" ;;
  esac
}

# np::release::build_arch ARCH VERSION DIR: the tarballs' binaries and the
# images' binaries for ARCH into DIR. kubelet and kube-controller-manager
# take hack/build.sh's tags and version ldflags; on the host's architecture
# with its cgo setting (so make build's cache serves them), cross-built
# with CGO_ENABLED=0. The rest are static, as hack/build.sh builds them;
# the mount-utilities image's two are left out with RELEASE_ONLY=small.
np::release::build_arch() {
  local arch=$1 version=$2 dir=$3 tags ldflags cgo=0 heavy=() mu=false started=${SECONDS}
  tags=$(np::designs::tags "${NODEPLUG_DESIGNS:-all}") || exit 1
  ldflags="$(np::build::ldflags) -X github.com/nodeplug/nodeplug/pkg/version.gitVersion=${version}"
  [[ "${arch}" == "$(go env GOHOSTARCH)" ]] && cgo=$(go env CGO_ENABLED)
  [[ " $(np::release::binaries) " == *" kubelet "* ]] && heavy=(./cmd/kubelet ./cmd/kube-controller-manager)
  [[ "${RELEASE_ONLY:-all}" == all ]] && mu=true
  mkdir -p "${dir}"
  np::log "building the ${arch} binaries into ${dir}"
  (
    cd "${NODEPLUG_ROOT}" && export GOOS=linux GOARCH="${arch}" &&
      if ((${#heavy[@]} > 0)); then
        CGO_ENABLED=${cgo} go build -tags "${tags}" -ldflags "${ldflags}" -o "${dir}/" "${heavy[@]}"
      fi &&
      CGO_ENABLED=0 go build -ldflags "-s -w" -o "${dir}/" ./cmd/local-volume-provisioner ./cmd/flexvolume-installer \
        ./cmd/mount-utilities-upgrade &&
      if [[ "${mu}" == true ]]; then
        CGO_ENABLED=0 go build -ldflags "-s -w" -o "${dir}/mount-utilities-init" ./build/mount-utilities/init &&
          CGO_ENABLED=0 go build -ldflags "-s -w" -o "${dir}/nodeplug-fuse-loopback" ./build/mount-utilities/fuse-loopback
      fi
  ) || np::die "go build for linux/${arch} failed (see the compiler output above)" \
    "run 'GOARCH=${arch} CGO_ENABLED=0 go build ./cmd/...' to reproduce"
  np::log "${arch} binaries built in $((SECONDS - started)) s"
}

# np::release::tar_gz DIR NAME OUT: OUT, a reproducible tar.gz of DIR's
# entry NAME (sorted, time 0, owner root).
np::release::tar_gz() {
  tar -C "$1" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - "$2" | gzip -9n >"$3"
}

# np::release::binaries_tarball ARCH VERSION BUILD OUT: the tarball
# OUT/nodeplug-VERSION-linux-ARCH.tar.gz of BUILD/ARCH's release binaries.
np::release::binaries_tarball() {
  local arch=$1 version=$2 build=$3 out=$4 name b
  name=nodeplug-${version}-linux-${arch}
  rm -rf "${build}/tar/${name}" && mkdir -p "${build}/tar/${name}/bin"
  for b in $(np::release::binaries); do
    cp "${build}/${arch}/${b}" "${build}/tar/${name}/bin/"
  done
  np::release::tar_gz "${build}/tar" "${name}" "${out}/${name}.tar.gz"
}

# np::release::image_ref NAME VERSION: the reference of build/NAME's image
# at VERSION (the recipe's repository, VERSION as the tag).
np::release::image_ref() {
  local name
  name=$(np::images::recipe "$1" | sed -n '/^-name$/{n;p;q}')
  [[ -n "${name}" ]] || np::die "build/$1/image.args has no -name" "add -name <repository>:<tag> to build/$1/image.args"
  echo "${name%:*}:$2"
}

# np::release::platform_image NAME ARCH BUILD WORK: WORK/NAME-ARCH.tar, the
# docker-archive of build/NAME's image for ARCH from BUILD/ARCH's binaries.
np::release::platform_image() {
  local name=$1 arch=$2 build=$3 work=$4 args extra=() bb
  mapfile -t args < <(BIN_DIR=${build}/${arch} np::images::recipe "${name}")
  if [[ "${name}" == local-volume-provisioner ]]; then
    bb=$(np::release::busybox "${arch}" "${work}") || exit 1
    mapfile -t extra < <(np::images::busybox_args "${bb}")
  fi
  "${work}/mkimage" -arch "${arch}" -o "${work}/${name}-${arch}.tar" "${args[@]}" "${extra[@]}" ||
    np::die "building the ${arch} ${name} image failed" "see build/${name}/README.md"
}

# np::release::mount_utilities ARCH BUILD WORK: WORK/mount-utilities-ARCH.tar.
# For the host's architecture, the image local-up builds
# (np::images::build_mount_utilities: the host's own tools and the
# libraries ldd finds); for another, the same tools from Debian's packages
# of that architecture (np::release::mount_utilities_foreign).
np::release::mount_utilities() {
  local arch=$1 build=$2 work=$3
  if [[ "${arch}" != "$(dpkg --print-architecture)" ]]; then
    np::release::mount_utilities_foreign "${arch}" "${build}" "${work}"
    return
  fi
  ln -sf "${work}/mkimage" "${build}/${arch}/mkimage"
  BIN_DIR=${build}/${arch} np::images::build_mount_utilities "${work}"
  mv "${work}/mount-utilities.tar" "${work}/mount-utilities-${arch}.tar"
}

# np::release::images VERSION BUILD OUT WORK: OUT/images/NAME-VERSION.oci.tar
# for each released image, each with every architecture's image
# (mount-utilities and kube-controller-manager left out with
# RELEASE_ONLY=small).
np::release::images() {
  local version=$1 build=$2 out=$3 work=$4 name arch tars
  mkdir -p "${out}/images"
  (cd "${NODEPLUG_ROOT}" && go build -o "${work}/mkimage" ./hack/tools/mkimage) ||
    np::die "building hack/tools/mkimage failed (see the compiler output above)"
  for name in flexvolume-installer local-volume-provisioner; do
    tars=()
    for arch in "${NP_RELEASE_ARCHES[@]}"; do
      np::release::platform_image "${name}" "${arch}" "${build}" "${work}"
      tars+=("${work}/${name}-${arch}.tar")
    done
    "${work}/mkimage" index -o "${out}/images/${name}-${version}.oci.tar" \
      -name "$(np::release::image_ref "${name}" "${version}")" "${tars[@]}" ||
      np::die "writing the OCI index of ${name} failed"
  done
  [[ "${RELEASE_ONLY:-all}" == small ]] && return 0
  tars=()
  for arch in "${NP_RELEASE_ARCHES[@]}"; do
    np::release::mount_utilities "${arch}" "${build}" "${work}"
    tars+=("${work}/mount-utilities-${arch}.tar")
  done
  "${work}/mkimage" index -o "${out}/images/mount-utilities-${version}.oci.tar" \
    -name "$(np::release::image_ref mount-utilities "${version}")" "${tars[@]}" ||
    np::die "writing the OCI index of mount-utilities failed"
  np::release::kcm_image "${version}" "${build}" "${out}" "${work}"
}

# np::release::manifests VERSION OUT: the manifests tarball and the
# packaged Helm charts (appVersion VERSION).
np::release::manifests() {
  local version=$1 out=$2 work=$3 name d chart
  name=nodeplug-${version}-manifests
  rm -rf "${work:?}/${name}" && mkdir -p "${work}/${name}"
  for d in "${NP_RELEASE_MANIFESTS[@]}"; do
    mkdir -p "${work}/${name}/${d}"
    (cd "${NODEPLUG_ROOT}/${d}" && git ls-files -z -- . ':!:*_test.go' | xargs -0 cp --parents -t "${work}/${name}/${d}")
  done
  np::release::tar_gz "${work}" "${name}" "${out}/${name}.tar.gz"
  np::helm::build
  for chart in "${NP_RELEASE_CHARTS[@]}"; do
    "${BIN_DIR}/helm" package "${NODEPLUG_ROOT}/deploy/helm/${chart}" \
      --app-version "${version}" -d "${out}" >/dev/null ||
      np::die "helm package of deploy/helm/${chart} failed" "run ${BIN_DIR}/helm lint deploy/helm/${chart}"
  done
}

# np::release::check_charts DIR: DIR holds one packaged chart of each of
# NP_RELEASE_CHARTS, <name>-<chart version>.tgz with <name>/Chart.yaml.
np::release::check_charts() {
  local dir=$1 chart tgz
  for chart in "${NP_RELEASE_CHARTS[@]}"; do
    tgz=$(compgen -G "${dir}/${chart}-[0-9]*.tgz") || np::die "${dir}: no packaged Helm chart ${chart}"
    [[ "${tgz}" != *$'\n'* ]] || np::die "${dir}: more than one packaged Helm chart ${chart}: ${tgz//$'\n'/ }"
    tar -tzf "${tgz}" 2>/dev/null | grep -qxF "${chart}/Chart.yaml" ||
      np::die "${tgz} is not a packaged Helm chart ${chart} (no ${chart}/Chart.yaml in it)"
  done
}

# np::release::all: everything into ${OUT_DIR}/release/VERSION, then its
# SHA256SUMS.
np::release::all() {
  local version out build arch started=${SECONDS}
  [[ "$(go env GOHOSTARCH)" == amd64 ]] ||
    np::die "make release runs on an amd64 host (the mount-utilities image takes the host's tools, and Debian's arm64 packages of their versions)" "run it on linux/amd64"
  command -v jq >/dev/null || np::die "jq is missing (the release check reads the image indexes with it)" "apt-get install jq"
  command -v readelf >/dev/null || np::die "readelf is missing (the arm64 image's libraries and the release check read ELF files with it)" "apt-get install binutils"
  version=$(np::release::version)
  np::release::binaries >/dev/null
  out=${OUT_DIR}/release/${version}
  build=${OUT_DIR}/release-build/${version}
  rm -rf "${out}" "${build}" && mkdir -p "${out}" "${build}/work"
  np::log "release ${version} (${RELEASE_ONLY:-all}) into ${out}"
  for arch in "${NP_RELEASE_ARCHES[@]}"; do
    np::release::build_arch "${arch}" "${version}" "${build}/${arch}"
    np::release::binaries_tarball "${arch}" "${version}" "${build}" "${out}"
  done
  np::release::images "${version}" "${build}" "${out}" "${build}/work"
  if [[ "${RELEASE_ONLY:-all}" == all ]]; then
    for arch in "${NP_RELEASE_ARCHES[@]}"; do
      np::release::server_tarball "${arch}" "${version}" "${build}" "${out}" "${build}/work"
    done
  fi
  np::release::manifests "${version}" "${out}" "${build}/work"
  (cd "${out}" && find . -type f -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >"${build}/SHA256SUMS") &&
    mv "${build}/SHA256SUMS" "${out}/SHA256SUMS"
  np::release::check "${out}" "${version}"
  np::log "release ${version} written to ${out} in $((SECONDS - started)) s"
}

# np::release::platforms OCI_TAR: the platforms of the one image index in
# an OCI archive, "os/arch" sorted, one line.
np::release::platforms() {
  local tmp idx
  tmp=$(mktemp -d)
  tar -C "${tmp}" -xf "$1" || { rm -rf "${tmp}"; return 1; }
  idx=$(jq -r '.manifests[0].digest | sub("sha256:"; "")' "${tmp}/index.json") &&
    jq -r '[.manifests[].platform | .os + "/" + .architecture] | sort | join(" ")' "${tmp}/blobs/sha256/${idx}"
  local rc=$?
  rm -rf "${tmp}"
  return "${rc}"
}

# np::release::unpack_image OCI_TAR DIR: each platform's file system of
# the one image index in OCI_TAR, in DIR/ARCH; prints the ARCHes.
np::release::unpack_image() {
  local tar=$1 dir=$2 blobs idx arch m layer
  mkdir -p "${dir}/oci" && tar -C "${dir}/oci" -xf "${tar}" || return 1
  blobs=${dir}/oci/blobs/sha256
  idx=$(jq -r '.manifests[0].digest | sub("sha256:"; "")' "${dir}/oci/index.json") || return 1
  while read -r arch m; do
    mkdir -p "${dir}/${arch}"
    for layer in $(jq -r '.layers[].digest | sub("sha256:"; "")' "${blobs}/${m}"); do
      tar -C "${dir}/${arch}" -xzf "${blobs}/${layer}" || return 1
    done
    echo "${arch}"
  done < <(jq -r '.manifests[] | .platform.architecture + " " + (.digest | sub("sha256:"; ""))' "${blobs}/${idx}")
}

# np::release::check_elves ARCH ROOT: every ELF file in the file system
# ROOT is for ARCH, and its program interpreter and the libraries its
# NEEDED entries name are in ROOT (in /lib/<triplet> or /usr/lib/<triplet>;
# a loader's own soname, which libc names, is the loader).
np::release::check_elves() {
  local arch=$1 root=$2 machine triplet f got interp lib elves=() loaders=" "
  machine=$(np::release::elf_machine "${arch}") && triplet=$(np::release::triplet "${arch}") || exit 1
  while read -r f; do
    got=$(readelf -h "${root}/${f}" 2>/dev/null | sed -n 's/^ *Machine: *//p')
    [[ -n "${got}" ]] || continue # not an ELF: a script, a config file
    [[ "${got}" == "${machine}" ]] || np::die "/${f} is an ELF for ${got}, not for ${arch} (${machine})"
    elves+=("${f}")
    interp=$(np::release::elf_interp "${root}/${f}")
    [[ -z "${interp}" ]] && continue
    np::release::staged "${root}" "${interp}" >/dev/null || np::die "/${f}: its loader ${interp} is not in the ${arch} image"
    loaders+="${interp##*/} "
  done < <(cd "${root}" && find . -type f -printf '%P\n' | LC_ALL=C sort)
  for f in "${elves[@]}"; do
    for lib in $(np::release::elf_needed "${root}/${f}"); do
      [[ "${loaders}" == *" ${lib} "* ]] && continue
      np::release::staged "${root}" "/lib/${triplet}/${lib}" >/dev/null || np::release::staged "${root}" "/usr/lib/${triplet}/${lib}" >/dev/null ||
        np::die "/${f}: ${lib} (NEEDED) is not in the ${arch} image"
    done
  done
}

# np::release::check_image OCI_TAR: each platform's image in OCI_TAR passes
# np::release::check_elves, and all have the same paths outside the
# library directories (/lib, /lib64, /usr/lib): every tool of the amd64
# image is in the arm64 one, at the same path.
np::release::check_image() (
  local tar=$1 tmp arches arch first=""
  tmp=$(mktemp -d)
  trap 'rm -rf "${tmp}"' EXIT
  arches=$(np::release::unpack_image "${tar}" "${tmp}") || np::die "${tar##*/} is not an OCI archive of one image index"
  for arch in ${arches}; do
    (np::release::check_elves "${arch}" "${tmp}/${arch}") || np::die "${tar##*/}: the ${arch} image is broken (above)"
    (cd "${tmp}/${arch}" && find . -mindepth 1 -printf '%P\n' | grep -Ev '^(usr/)?lib(64)?(/|$)' | LC_ALL=C sort) >"${tmp}/${arch}.paths"
    [[ -n "${first}" ]] || first=${arch}
    diff "${tmp}/${first}.paths" "${tmp}/${arch}.paths" >&2 ||
      np::die "${tar##*/}: the ${first} and ${arch} images differ in the paths above (< ${first}, > ${arch})"
  done
  [[ -n "${first}" ]] || np::die "${tar##*/} has no platform image"
)

# np::release::check DIR VERSION: DIR is a release of VERSION: SHA256SUMS
# lists every file and every sum matches, each architecture's tarball holds
# the binaries of RELEASE_ONLY, and each image's index has both platforms,
# each image's ELF files are of its architecture with their libraries, and
# its platforms hold the same tools (np::release::check_image).
np::release::check() {
  local dir=$1 version=$2 arch b want got name list
  (cd "${dir}" && sha256sum --quiet -c SHA256SUMS) || np::die "${dir}: SHA256SUMS does not match the files"
  list=$(cd "${dir}" && find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort)
  [[ "${list}" == "$(awk '{print $2}' "${dir}/SHA256SUMS" | LC_ALL=C sort)" ]] ||
    np::die "${dir}: SHA256SUMS does not list exactly the release's files"
  for arch in "${NP_RELEASE_ARCHES[@]}"; do
    list=$(tar -tzf "${dir}/nodeplug-${version}-linux-${arch}.tar.gz") || np::die "${dir}: the ${arch} tarball is unreadable"
    for b in $(np::release::binaries); do
      grep -qxF "nodeplug-${version}-linux-${arch}/bin/${b}" <<<"${list}" || np::die "${dir}: the ${arch} tarball has no bin/${b}"
    done
  done
  want="linux/amd64 linux/arm64"
  for name in flexvolume-installer local-volume-provisioner mount-utilities kube-controller-manager; do
    [[ "${name}" != mount-utilities && "${name}" != kube-controller-manager || "${RELEASE_ONLY:-all}" == all ]] || continue
    got=$(np::release::platforms "${dir}/images/${name}-${version}.oci.tar") ||
      np::die "${dir}/images/${name}-${version}.oci.tar is not an OCI archive with an image index"
    [[ "${got}" == "${want}" ]] || np::die "${name}: the index has platforms '${got}', want '${want}'"
    np::release::check_image "${dir}/images/${name}-${version}.oci.tar" || exit 1
  done
  if [[ "${RELEASE_ONLY:-all}" == all ]]; then
    for arch in "${NP_RELEASE_ARCHES[@]}"; do
      np::release::check_server_tarball "${dir}/kubernetes-server-linux-${arch}.tar.gz" "${arch}" || exit 1
    done
  fi
  list=$(tar -tzf "${dir}/nodeplug-${version}-manifests.tar.gz") || np::die "${dir}: the manifests tarball is unreadable"
  grep -q "/deploy/local-volume-provisioner/crd.yaml$" <<<"${list}" ||
    np::die "${dir}: the manifests tarball has no deploy/local-volume-provisioner/crd.yaml"
  np::release::check_charts "${dir}"
  np::log "release ${version} in ${dir}: sums, tarballs, image platforms and contents are right"
}
