#!/usr/bin/env bash
# make release (hack/release.sh): per architecture, a tarball of the
# binaries an operator installs on a node or runs in the cluster; the images
# as OCI archives, one multi-platform index each; the manifests and the Helm
# chart packaged; SHA256SUMS of them all. docs/release.md says what each
# holds and how to check it.

source "$(dirname "${BASH_SOURCE[0]}")/build.sh"
source "$(dirname "${BASH_SOURCE[0]}")/images.sh"
source "$(dirname "${BASH_SOURCE[0]}")/helm.sh"

NP_RELEASE_ARCHES=(amd64 arm64)
# The binaries of the per-architecture tarballs. The first two are heavy
# (upstream's kubelet and controller-manager): RELEASE_ONLY=small leaves
# them out.
NP_RELEASE_HEAVY=(kubelet kube-controller-manager)
NP_RELEASE_SMALL=(local-volume-provisioner flexvolume-installer)
# The images and the architectures each is built for. mount-utilities
# copies the build host's own tools with their shared libraries
# (hack/lib/images.sh), so it is built for the host's architecture only.
NP_RELEASE_MANIFESTS=(deploy/local-volume-provisioner deploy/flexvolume deploy/mount-utilities)

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
# with CGO_ENABLED=0. The rest are static, as hack/build.sh builds them.
np::release::build_arch() {
  local arch=$1 version=$2 dir=$3 tags ldflags cgo=0 heavy=() host=false started=${SECONDS}
  tags=$(np::designs::tags "${NODEPLUG_DESIGNS:-all}") || exit 1
  ldflags="$(np::build::ldflags) -X github.com/nodeplug/nodeplug/pkg/version.gitVersion=${version}"
  [[ "${arch}" == "$(go env GOHOSTARCH)" ]] && cgo=$(go env CGO_ENABLED) host=true
  [[ " $(np::release::binaries) " == *" kubelet "* ]] && heavy=(./cmd/kubelet ./cmd/kube-controller-manager)
  # The mount-utilities image's own programs: that image is the host's only.
  [[ "${host}" == true && "${RELEASE_ONLY:-all}" == all ]] || host=false
  mkdir -p "${dir}"
  np::log "building the ${arch} binaries into ${dir}"
  (
    cd "${NODEPLUG_ROOT}" && export GOOS=linux GOARCH="${arch}" &&
      if ((${#heavy[@]} > 0)); then
        CGO_ENABLED=${cgo} go build -tags "${tags}" -ldflags "${ldflags}" -o "${dir}/" "${heavy[@]}"
      fi &&
      CGO_ENABLED=0 go build -ldflags "-s -w" -o "${dir}/" ./cmd/local-volume-provisioner ./cmd/flexvolume-installer &&
      if [[ "${host}" == true ]]; then
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

# np::release::busybox ARCH WORK: the path of a static busybox for ARCH:
# the host's /bin/busybox, or busybox-static:ARCH of the host's version,
# downloaded from the host's Debian sources into WORK with an apt state of
# its own (the host's dpkg architectures and lists are left alone).
np::release::busybox() {
  local arch=$1 work=$2 version d opts
  if [[ "${arch}" == "$(dpkg --print-architecture)" ]]; then
    echo /bin/busybox
    return
  fi
  version=$(dpkg-query -W -f '${Version}' busybox-static 2>/dev/null) ||
    np::die "busybox-static is missing" "apt-get install busybox-static"
  d=${work}/apt-${arch}
  rm -rf "${d}" && mkdir -p "${d}/lists/partial" "${d}/cache/archives/partial" "${d}/sources" "${d}/deb"
  cp /etc/apt/sources.list.d/debian.sources "${d}/sources/" 2>/dev/null ||
    np::die "no /etc/apt/sources.list.d/debian.sources to download busybox-static:${arch} from" "run on Debian 12 with its default apt sources"
  : >"${d}/status"
  opts=(-o "APT::Architecture=${arch}" -o "APT::Architectures::=${arch}" -o "Dir::State::Lists=${d}/lists"
    -o "Dir::Cache=${d}/cache" -o "Dir::State::status=${d}/status" -o Dir::Etc::SourceList=/dev/null
    -o "Dir::Etc::SourceParts=${d}/sources" -o APT::Sandbox::User=root)
  {
    apt-get -qq "${opts[@]}" update &&
      (cd "${d}/deb" && apt-get -qq "${opts[@]}" download "busybox-static:${arch}=${version}") &&
      dpkg-deb -x "${d}"/deb/busybox-static_*.deb "${d}/root"
  } >&2 || np::die "downloading busybox-static:${arch} ${version} failed" "check that the Debian mirror in /etc/apt/sources.list.d/debian.sources is reachable"
  echo "${d}/root/bin/busybox"
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

# np::release::images VERSION BUILD OUT WORK: OUT/images/NAME-VERSION.oci.tar
# for each released image: flexvolume-installer and local-volume-provisioner
# for every architecture, mount-utilities for the host's (amd64) only.
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
  ln -sf "${work}/mkimage" "${build}/amd64/mkimage"
  BIN_DIR=${build}/amd64 np::images::build_mount_utilities "${work}"
  "${work}/mkimage" index -o "${out}/images/mount-utilities-${version}.oci.tar" \
    -name "$(np::release::image_ref mount-utilities "${version}")" "${work}/mount-utilities.tar" ||
    np::die "writing the OCI index of mount-utilities failed"
}

# np::release::manifests VERSION OUT: the manifests tarball and the
# packaged Helm chart (appVersion VERSION).
np::release::manifests() {
  local version=$1 out=$2 work=$3 name d
  name=nodeplug-${version}-manifests
  rm -rf "${work:?}/${name}" && mkdir -p "${work}/${name}"
  for d in "${NP_RELEASE_MANIFESTS[@]}"; do
    mkdir -p "${work}/${name}/${d}"
    (cd "${NODEPLUG_ROOT}/${d}" && git ls-files -z -- . ':!:*_test.go' | xargs -0 cp --parents -t "${work}/${name}/${d}")
  done
  np::release::tar_gz "${work}" "${name}" "${out}/${name}.tar.gz"
  np::helm::build
  "${BIN_DIR}/helm" package "${NODEPLUG_ROOT}/deploy/helm/local-volume-provisioner" \
    --app-version "${version}" -d "${out}" >/dev/null ||
    np::die "helm package of deploy/helm/local-volume-provisioner failed" "run ${BIN_DIR}/helm lint deploy/helm/local-volume-provisioner"
}

# np::release::all: everything into ${OUT_DIR}/release/VERSION, then its
# SHA256SUMS.
np::release::all() {
  local version out build arch started=${SECONDS}
  [[ "$(go env GOHOSTARCH)" == amd64 ]] ||
    np::die "make release runs on an amd64 host (the mount-utilities image takes the host's tools)" "run it on linux/amd64"
  command -v jq >/dev/null || np::die "jq is missing (the release check reads the image indexes with it)" "apt-get install jq"
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

# np::release::check DIR VERSION: DIR is a release of VERSION: SHA256SUMS
# lists every file and every sum matches, each architecture's tarball holds
# the binaries of RELEASE_ONLY, and each image's index has the platforms it
# is built for.
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
  for name in flexvolume-installer local-volume-provisioner mount-utilities; do
    [[ "${name}" == mount-utilities ]] && want=linux/amd64
    [[ "${name}" == mount-utilities && "${RELEASE_ONLY:-all}" == small ]] && continue
    got=$(np::release::platforms "${dir}/images/${name}-${version}.oci.tar") ||
      np::die "${dir}/images/${name}-${version}.oci.tar is not an OCI archive with an image index"
    [[ "${got}" == "${want}" ]] || np::die "${name}: the index has platforms '${got}', want '${want}'"
  done
  list=$(tar -tzf "${dir}/nodeplug-${version}-manifests.tar.gz") || np::die "${dir}: the manifests tarball is unreadable"
  grep -q "/deploy/local-volume-provisioner/crd.yaml$" <<<"${list}" ||
    np::die "${dir}: the manifests tarball has no deploy/local-volume-provisioner/crd.yaml"
  [[ -f "$(echo "${dir}"/local-volume-provisioner-*.tgz)" ]] || np::die "${dir}: no packaged Helm chart"
  np::log "release ${version} in ${dir}: sums, tarballs and image platforms are right"
}
