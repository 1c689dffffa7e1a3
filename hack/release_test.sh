#!/usr/bin/env bash
# Tests of hack/lib/release.sh that build nothing heavy and download
# nothing (part of make verify, a few seconds): the version and RELEASE_ONLY
# refusals; np::release::check on a small release made here (tiny images
# joined by mkimage index) that it must accept, then on broken copies of it
# that it must refuse, each named; the same for the platform images'
# contents (np::release::check_image), the staging of arm64 tools from
# unpacked packages (np::release::staged_binary_args) and the choice of
# their versions (np::release::arch_version).
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/release.sh"
command -v readelf >/dev/null || np::die "readelf is missing (the image checks read ELF files with it)" "apt-get install binutils (hack/install-deps.sh)"
command -v jq >/dev/null || np::die "jq is missing (the release check reads image indexes with it)" "apt-get install jq"
work=$(mktemp -d /tmp/np-release-test.XXXXXX)
trap 'rm -rf "${work}"' EXIT
failures=0

# expect NAME WANT(ok|fail) COMMAND...: run COMMAND in a subshell (np::die
# exits) and check its outcome.
expect() {
  local name=$1 want=$2 got=ok
  shift 2
  ("$@") >"${work}/out" 2>&1 || got=fail
  if [[ "${got}" != "${want}" ]]; then
    np::warn "release_test: ${name}: ${got}, want ${want}"$'\n'"$(cat "${work}/out")"
    failures=$((failures + 1))
  fi
}

with_version() { RELEASE_VERSION=$1 np::release::version; }
with_only() { RELEASE_ONLY=$1 np::release::binaries; }

expect "version v1.2.3" ok with_version v1.2.3
expect "version v0.2.0-rc.1" ok with_version v0.2.0-rc.1
expect "version without v" fail with_version 1.2.3
expect "version without patch" fail with_version v1.2
expect "version with a slash" fail with_version v1.2.3/../x
expect "version with a space" fail with_version "v1.2.3 x"
expect "RELEASE_ONLY=small" ok with_only small
expect "RELEASE_ONLY=bogus" fail with_only bogus

# A small release of version v9.9.9: what RELEASE_ONLY=small writes, with
# placeholder binaries.
version=v9.9.9
go build -o "${work}/mkimage" "${NODEPLUG_ROOT}/hack/tools/mkimage"
make_release() {
  local dir=$1 arch name
  mkdir -p "${dir}/images" "${work}/src"
  for arch in "${NP_RELEASE_ARCHES[@]}"; do
    mkdir -p "${work}/src/${arch}" "${work}/tar/nodeplug-${version}-linux-${arch}/bin"
    for name in "${NP_RELEASE_SMALL[@]}"; do
      echo "${name} for ${arch}" >"${work}/tar/nodeplug-${version}-linux-${arch}/bin/${name}"
    done
    np::release::tar_gz "${work}/tar" "nodeplug-${version}-linux-${arch}" "${dir}/nodeplug-${version}-linux-${arch}.tar.gz"
    "${work}/mkimage" -arch "${arch}" -o "${work}/src/${arch}/image.tar" -name "x/y:${version}" -file "/bin/x=${BASH_SOURCE[0]}"
  done
  for name in flexvolume-installer local-volume-provisioner; do
    "${work}/mkimage" index -o "${dir}/images/${name}-${version}.oci.tar" -name "docker.io/nodeplug/${name}:${version}" \
      "${work}/src/amd64/image.tar" "${work}/src/arm64/image.tar"
  done
  mkdir -p "${work}/m/nodeplug-${version}-manifests/deploy/local-volume-provisioner"
  touch "${work}/m/nodeplug-${version}-manifests/deploy/local-volume-provisioner/crd.yaml"
  np::release::tar_gz "${work}/m" "nodeplug-${version}-manifests" "${dir}/nodeplug-${version}-manifests.tar.gz"
  for name in "${NP_RELEASE_CHARTS[@]}"; do
    mkdir -p "${work}/charts/${name}" && echo "name: ${name}" >"${work}/charts/${name}/Chart.yaml"
    np::release::tar_gz "${work}/charts" "${name}" "${dir}/${name}-0.1.0.tgz"
  done
  (cd "${dir}" && find . -type f -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >"${work}/sums" && mv "${work}/sums" SHA256SUMS)
}
check_small() { RELEASE_ONLY=small np::release::check "$1" "${version}"; }

make_release "${work}/good"
expect "a whole small release" ok check_small "${work}/good"

# broken NAME COMMAND...: a copy of the good release, changed by COMMAND
# (run in the copy), must be refused.
broken() {
  local name=$1
  shift
  rm -rf "${work}/bad" && cp -r "${work}/good" "${work}/bad"
  (cd "${work}/bad" && "$@")
  expect "${name}" fail check_small "${work}/bad"
}
broken "a file changed after its sum" sh -c 'echo x >>local-volume-provisioner-0.1.0.tgz'
broken "a file without its sum" sh -c 'grep -v manifests SHA256SUMS >s && mv s SHA256SUMS'
# resum: SHA256SUMS of the changed copy, so that only the change is wrong.
resum() { find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >"${work}/sums" && mv "${work}/sums" SHA256SUMS; }
no_lvp_chart() { rm local-volume-provisioner-0.1.0.tgz && resum; }
broken "no local-volume-provisioner chart" no_lvp_chart
no_mu_chart() { rm mount-utilities-0.1.0.tgz && resum; }
broken "no mount-utilities chart" no_mu_chart
not_a_chart() { echo chart | gzip -n >mount-utilities-0.1.0.tgz && resum; }
broken "a mount-utilities-0.1.0.tgz that is not a chart" not_a_chart
two_charts() { cp mount-utilities-0.1.0.tgz mount-utilities-0.2.0.tgz && resum; }
broken "two mount-utilities charts" two_charts
one_platform() {
  "${work}/mkimage" index -o images/local-volume-provisioner-${version}.oci.tar \
    -name docker.io/nodeplug/local-volume-provisioner:${version} "${work}/src/amd64/image.tar"
  find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >"${work}/sums" && mv "${work}/sums" SHA256SUMS
}
broken "an image index with amd64 only" one_platform
no_binary() { # ARCH BINARY
  local d=${work}/tar/nodeplug-${version}-linux-$1
  mv "${d}/bin/$2" "${work}/saved"
  np::release::tar_gz "${work}/tar" "nodeplug-${version}-linux-$1" "nodeplug-${version}-linux-$1.tar.gz"
  mv "${work}/saved" "${d}/bin/$2"
  find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >"${work}/sums" && mv "${work}/sums" SHA256SUMS
}
broken "an arm64 tarball without flexvolume-installer" no_binary arm64 flexvolume-installer
broken "an amd64 tarball without mount-utilities-upgrade" no_binary amd64 mount-utilities-upgrade

# Platform images' contents (np::release::check_image) and the staging of
# another architecture's tools (np::release::staged_binary_args), offline:
# the host's /usr/bin/true with its libc and loader, and "arm64" copies of
# them whose ELF header names AArch64 (readelf reads the rest alike).
mkdir -p "${work}/elf"
as_arm64() { cp "$1" "$2" && printf '\267' | dd of="$2" bs=1 seek=18 conv=notrunc status=none; }
libc=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6) loader=$(readlink -f /lib64/ld-linux-x86-64.so.2)
as_arm64 /usr/bin/true "${work}/elf/true" && as_arm64 "${libc}" "${work}/elf/libc" && as_arm64 "${loader}" "${work}/elf/ld"
platform() { # ARCH NAME MKIMAGE-ARGS...: ${work}/img/NAME.tar
  local arch=$1 name=$2
  shift 2
  mkdir -p "${work}/img" && "${work}/mkimage" -arch "${arch}" -o "${work}/img/${name}.tar" -name "x/y:${version}" -file "/etc/x.conf=${NODEPLUG_ROOT}/hack/release_test.sh" "$@"
}
platform amd64 amd64 -file /usr/bin/true=/usr/bin/true:0755 -file "/lib/x86_64-linux-gnu/libc.so.6=${libc}" -file "/lib64/ld-linux-x86-64.so.2=${loader}"
platform amd64 amd64-nolibc -file /usr/bin/true=/usr/bin/true:0755 -file "/lib64/ld-linux-x86-64.so.2=${loader}"
platform arm64 arm64 -file "/usr/bin/true=${work}/elf/true:0755" -file "/lib/aarch64-linux-gnu/libc.so.6=${work}/elf/libc" -file "/lib64/ld-linux-x86-64.so.2=${work}/elf/ld"
platform arm64 arm64-amd64-true -file /usr/bin/true=/usr/bin/true:0755 -file "/lib/aarch64-linux-gnu/libc.so.6=${work}/elf/libc" -file "/lib64/ld-linux-x86-64.so.2=${work}/elf/ld"
platform arm64 arm64-noloader -file "/usr/bin/true=${work}/elf/true:0755" -file "/lib/aarch64-linux-gnu/libc.so.6=${work}/elf/libc"
platform arm64 arm64-other-path -file "/bin/true=${work}/elf/true:0755" -file "/lib/aarch64-linux-gnu/libc.so.6=${work}/elf/libc" -file "/lib64/ld-linux-x86-64.so.2=${work}/elf/ld"
image() { # AMD64 ARM64: np::release::check_image of their index
  "${work}/mkimage" index -o "${work}/img/index.oci.tar" -name "x/y:${version}" "${work}/img/$1.tar" "${work}/img/$2.tar" &&
    np::release::check_image "${work}/img/index.oci.tar"
}
expect "image: each platform's ELF files of its architecture with their libraries" ok image amd64 arm64
expect "image: an amd64 binary in the arm64 image" fail image amd64 arm64-amd64-true
expect "image: an amd64 binary without its libc" fail image amd64-nolibc arm64
expect "image: an arm64 binary without its loader" fail image amd64 arm64-noloader
expect "image: a tool at another path in the arm64 image" fail image amd64 arm64-other-path

# The kube-controller-manager image and the server tarballs kind reads,
# made by the release's own functions from placeholder binaries: for amd64
# the host's /usr/bin/true (linked with glibc, as make build links the
# controller-manager), for arm64 an "arm64" copy of the static busybox (as
# the release cross-builds it static).
mkdir -p "${work}/kb/amd64" "${work}/kb/arm64" "${work}/kout/images" "${work}/kwork"
cp /usr/bin/true "${work}/kb/amd64/kube-controller-manager" && cp /usr/bin/true "${work}/kb/amd64/kubelet"
as_arm64 /bin/busybox "${work}/kb/arm64/kube-controller-manager" && as_arm64 /bin/busybox "${work}/kb/arm64/kubelet"
ln -s "${work}/mkimage" "${work}/kwork/mkimage"
kcm_release() {
  local arch
  np::release::kcm_image "${version}" "${work}/kb" "${work}/kout" "${work}/kwork" || return 1
  for arch in "${NP_RELEASE_ARCHES[@]}"; do
    np::release::server_tarball "${arch}" "${version}" "${work}/kb" "${work}/kout" "${work}/kwork" || return 1
  done
}
kcm_index() {
  local got
  got=$(np::release::platforms "${work}/kout/images/kube-controller-manager-${version}.oci.tar") &&
    [[ "${got}" == "linux/amd64 linux/arm64" ]] || { echo "platforms '${got:-}'"; return 1; }
  np::release::check_image "${work}/kout/images/kube-controller-manager-${version}.oci.tar"
}
expect "kube-controller-manager image and server tarballs made" ok kcm_release
expect "kube-controller-manager image: both platforms, the amd64 binary with its libc and loader" ok kcm_index
expect "server tarball amd64: the layout kind reads" ok np::release::check_server_tarball "${work}/kout/kubernetes-server-linux-amd64.tar.gz" amd64
expect "server tarball arm64: the layout kind reads" ok np::release::check_server_tarball "${work}/kout/kubernetes-server-linux-arm64.tar.gz" arm64
# server_broken NAME ARCH COMMAND...: the ARCH server tarball, changed by
# COMMAND (run in its unpacked copy) and packed again, must be refused.
server_broken() {
  local name=$1 arch=$2
  shift 2
  rm -rf "${work}/sb" "${work}/sb.tar.gz" && mkdir -p "${work}/sb"
  tar -C "${work}/sb" -xzf "${work}/kout/kubernetes-server-linux-${arch}.tar.gz"
  (cd "${work}/sb" && "$@" && tar -czf "${work}/sb.tar.gz" -- *)
  expect "server tarball: ${name}" fail np::release::check_server_tarball "${work}/sb.tar.gz" "${arch}"
}
kbin=kubernetes/server/bin
server_broken "no kubernetes/version" amd64 rm kubernetes/version
server_broken "a symlink, which kind writes as an empty file" amd64 ln -sf kube-controller-manager "${kbin}/kubelet"
server_broken "an entry outside kubernetes/" amd64 touch README
server_broken "the image tagged with nodeplug's name, so kubeadm pulls upstream's" amd64 \
  cp "${work}/kwork/kube-controller-manager-amd64.tar" "${kbin}/kube-controller-manager.tar"
server_broken "the arm64 image in the amd64 tarball" amd64 \
  cp "${work}/kwork/kube-controller-manager-arm64.kind.tar" "${kbin}/kube-controller-manager.tar"
server_broken "an amd64 kubelet in the arm64 tarball" arm64 cp /usr/bin/true "${kbin}/kubelet"
server_broken "the image's binary is not server/bin's" amd64 cp /bin/busybox "${kbin}/kube-controller-manager"
server_broken "a docker_tag of another version" amd64 sh -c "echo v0.0.1 >${kbin}/kube-controller-manager.docker_tag"

# A root of unpacked "arm64 packages": pre-merged /usr, libraries by
# soname links, as Debian 12's packages have them.
mkdir -p "${work}/root/bin" "${work}/root/lib/aarch64-linux-gnu" "${work}/root/lib64"
cp "${work}/elf/true" "${work}/root/bin/true" && cp "${work}/elf/libc" "${work}/root/lib/aarch64-linux-gnu/libc-2.36.so"
ln -s libc-2.36.so "${work}/root/lib/aarch64-linux-gnu/libc.so.6"
cp "${work}/elf/ld" "${work}/root/lib/aarch64-linux-gnu/ld.so" && ln -s /lib/aarch64-linux-gnu/ld.so "${work}/root/lib64/ld-linux-x86-64.so.2"
staged() { np::release::staged_binary_args arm64 "${work}/root" "$@"; }
staged_exactly() {
  local got want
  got=$(staged /usr/bin/true) || return 1
  want=$(printf '%s\n' -file "/usr/bin/true=${work}/root/bin/true:0755" -file "/lib/aarch64-linux-gnu/libc.so.6=${work}/root/lib/aarch64-linux-gnu/libc-2.36.so" \
    -file "/lib64/ld-linux-x86-64.so.2=${work}/root/lib/aarch64-linux-gnu/ld.so")
  [[ "${got}" == "${want}" ]] || { echo "got:"$'\n'"${got}"$'\n'"want:"$'\n'"${want}"; return 1; }
}
expect "staging: a tool with its library and loader, links followed in the root" ok staged_exactly
expect "staging: a tool in none of the packages" fail staged /usr/bin/false
without_libc() { rm "${work}/root/lib/aarch64-linux-gnu/libc.so.6" && staged /usr/bin/true; }
expect "staging: a library in none of the packages" fail without_libc
amd64_tool() { cp /usr/bin/true "${work}/root/bin/true" && staged /usr/bin/true; }
expect "staging: an amd64 tool among the arm64 packages" fail amd64_tool

# The arm64 version of a host package, from apt-cache madison's answer.
madison=$(printf '%s\n' ' e2fsprogs | 1.47.0-2+b2 | http://deb.debian.org/debian bookworm/main arm64 Packages' \
  '     libc6 | 2.36-9+deb12u14 | http://deb.debian.org/debian bookworm/main arm64 Packages' \
  '     libc6 | 2.36-9+deb12u7 | http://deb.debian.org/debian-security bookworm-security/main arm64 Packages' \
  'libc6-dev | 2.36-9+deb12u9 | http://deb.debian.org/debian bookworm/main arm64 Packages')
arch_version() { # PACKAGE HOST-VERSION WANT
  local got
  got=$(np::release::arch_version "$1" "$2" <<<"${madison}") && [[ "${got}" == "$3" ]] || { echo "got '${got:-}', want '$3'"; return 1; }
}
expect "arch version: the host's own" ok arch_version libc6 2.36-9+deb12u7 2.36-9+deb12u7
expect "arch version: another binNMU of the same source" ok arch_version e2fsprogs 1.47.0-2 1.47.0-2+b2
expect "arch version: none of the host's source version" fail arch_version libc6 2.36-9+deb12u9 -
expect "arch version: a package the mirror lacks" fail arch_version libfoo1 1.0-1 -

# RELEASE_REGISTRY: the small release pushed into the local cluster's
# registry (hack/tools/registry) on a free loopback port, over TLS from a CA
# made here: each image lands as the index the archive holds, and the chart
# pulled back defaults to the pushed provisioner image.
source "${NODEPLUG_ROOT}/hack/lib/release-push.sh"
np::build::registry
np::helm::build
push_release() {
  local port pki=${work}/reg-pki pid rc=0 out f want got name
  mkdir -p "${pki}"
  openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "${pki}/ca.key" -subj /CN=release-test-ca -days 1 -out "${pki}/ca.crt" 2>/dev/null
  openssl req -new -newkey rsa:2048 -nodes -keyout "${pki}/tls.key" -subj /CN=localhost -out "${pki}/tls.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"${pki}/ext"
  openssl x509 -req -in "${pki}/tls.csr" -CA "${pki}/ca.crt" -CAkey "${pki}/ca.key" -CAcreateserial -days 1 \
    -extfile "${pki}/ext" -out "${pki}/tls.crt" 2>/dev/null
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "${BIN_DIR}/registry" -root "${work}/reg-data" -cert "${pki}/tls.crt" -key "${pki}/tls.key" -listen "127.0.0.1:${port}" 2>"${work}/reg.log" &
  pid=$!
  for _ in $(seq 50); do curl -sf --cacert "${pki}/ca.crt" "https://127.0.0.1:${port}/v2/" >/dev/null && break; sleep 0.1; done
  out=$(np::release::push "${work}/good" "${version}" "127.0.0.1:${port}/test" "${pki}/ca.crt" 2>&1) || rc=1
  for f in "${work}"/good/images/*.oci.tar; do
    name=${f##*/} && name=${name%-"${version}".oci.tar}
    want=$(tar -xOf "${f}" index.json | jq -r '.manifests[0].digest')
    grep -qxF "127.0.0.1:${port}/test/${name}:${version}@${want}" <<<"${out}" || { echo "${name}: pushed not as ${want}: ${out}"; rc=1; }
  done
  if ((rc == 0)); then
    for name in local-volume-provisioner mount-utilities; do
      got=$(HELM_CONFIG_HOME=${work}/helm HELM_CACHE_HOME=${work}/helm "${BIN_DIR}/helm" show values \
        "oci://127.0.0.1:${port}/test/charts/${name}" --version "${version#v}" --ca-file "${pki}/ca.crt" 2>&1 | grep '^image:') || rc=1
      [[ "${got}" == "image: 127.0.0.1:${port}/test/${name}:${version}" ]] || { echo "${name} chart's image: ${got}"; rc=1; }
    done
  fi
  kill "${pid}" && wait "${pid}" 2>/dev/null
  return "${rc}"
}
expect "push: the images' indexes and the chart, defaulting to the pushed image" ok push_release
expect "push: a registry name in upper case" fail np::release::push "${work}/good" "${version}" "Registry.example/x"
expect "push: a CA file that does not exist" fail np::release::push "${work}/good" "${version}" "127.0.0.1:1/x" "${work}/no-ca.crt"

((failures == 0)) || np::die "release_test: ${failures} case(s) failed" "see the cases above"
np::log "release_test: version and RELEASE_ONLY refusals, np::release::check accepts a release and refuses 9 broken ones, the kube-controller-manager image passes np::release::check_image, np::release::check_server_tarball accepts both server tarballs and refuses 8 broken ones, np::release::check_image accepts an image and refuses 4 broken ones, np::release::staged_binary_args stages a tool and refuses 3 bad roots, np::release::arch_version picks 2 versions and refuses 2, np::release::push pushes a release into a registry and refuses 2 bad settings"
