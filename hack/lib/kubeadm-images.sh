#!/usr/bin/env bash
# np::kubeadm_images::build DIR: the control plane images a kubeadm cluster
# of the local cluster's registry runs, as docker-archives in DIR, under
# the names `kubeadm config images list --image-repository
# ${KUBEADM_IMAGE_REPO}` prints: upstream's kube-apiserver,
# kube-scheduler, kube-proxy (with the host's iptables and conntrack, in
# the host's nf_tables or legacy mode) and etcd, built from the pinned
# modules by hack/build.sh; nodeplug's kube-controller-manager; and the
# pause image. Each binary comes with the shared libraries it links (the
# local builds use cgo), as the mount-utilities image does.
# docs/local-cluster.md, "A kubeadm cluster".

KUBEADM_IMAGE_REPO=${LOCAL_REGISTRY:-localhost:5000}/kubeadm

# np::kubeadm_images::binary NAME TAG DIR [EXTRA...]: DIR/NAME.tar with
# ${BIN_DIR}/NAME at /usr/local/bin/NAME and its libraries, plus the
# mkimage arguments EXTRA.
np::kubeadm_images::binary() {
  local name=$1 tag=$2 dir=$3 libs
  shift 3
  libs=$(np::images::library_args "${BIN_DIR}/${name}") || np::die "the libraries of ${name} are missing"
  mapfile -t libs <<<"${libs}"
  [[ -n "${libs[*]}" ]] || libs=()
  "${BIN_DIR}/mkimage" -o "${dir}/${name}.tar" -name "${KUBEADM_IMAGE_REPO}/${name}:${tag}" \
    -file "/usr/local/bin/${name}=${BIN_DIR}/${name}:0755" -dir /tmp -dir /etc -dir /var/run "${libs[@]}" "$@" ||
    np::die "building the ${name} image for kubeadm failed"
}

np::kubeadm_images::build() {
  local dir=$1 version=${KUBE_VERSION} etcd proxy_tools
  mkdir -p "${dir}"
  etcd=$(np::kubeadm_images::etcd_tag) || exit 1
  np::kubeadm_images::binary kube-apiserver "${version}" "${dir}"
  np::kubeadm_images::binary kube-controller-manager "${version}" "${dir}"
  np::kubeadm_images::binary kube-scheduler "${version}" "${dir}"
  np::kubeadm_images::binary etcd "${etcd}" "${dir}" -dir /var/lib/etcd
  # kube-proxy runs iptables-restore, iptables-save, ip6tables-* and
  # conntrack: the host's, with their libraries.
  proxy_tools=$(np::images::host_binary_args /usr/sbin/iptables /usr/sbin/iptables-save /usr/sbin/iptables-restore \
    /usr/sbin/ip6tables /usr/sbin/ip6tables-save /usr/sbin/ip6tables-restore /usr/sbin/conntrack) ||
    np::die "collecting iptables and conntrack for the kube-proxy image failed" "apt-get install iptables conntrack"
  mapfile -t proxy_tools <<<"${proxy_tools}"
  # iptables loads its match and target extensions (conntrack, comment,
  # mark, ...) with dlopen, so ldd does not list them: the whole directory.
  local ext xtables
  xtables=$(readlink -f "$(dirname "$(ldconfig -p | awk '/libxtables.so/ {print $NF; exit}')")/xtables")
  [[ -d "${xtables}" ]] || np::die "iptables' extensions are not in ${xtables}" "apt-get install iptables"
  for ext in "${xtables}"/*.so; do
    proxy_tools+=(-file "${ext}=$(readlink -f "${ext}")")
  done
  local ext_libs
  ext_libs=$(np::images::library_args "${xtables}"/*.so) || np::die "the libraries of iptables' extensions are missing"
  mapfile -t -O "${#proxy_tools[@]}" proxy_tools <<<"${ext_libs}"
  np::kubeadm_images::binary kube-proxy "${version}" "${dir}" "${proxy_tools[@]}" -dir /run -dir /lib/modules
  "${BIN_DIR}/mkimage" -o "${dir}/pause.tar" -name "${KUBEADM_IMAGE_REPO}/pause:$(np::kubeadm_images::pause_tag)" \
    -file "/pause=${BIN_DIR}/pause:0755" -entrypoint /pause || np::die "building the pause image for kubeadm failed"
}

# np::kubeadm_images::etcd_tag: the etcd tag kubeadm asks for, which must
# be the etcd the pinned module builds (3.7.0 is 3.7.0-0).
np::kubeadm_images::etcd_tag() {
  local want have
  want=$("${BIN_DIR}/kubeadm" config images list --kubernetes-version "${KUBE_VERSION}" 2>/dev/null | sed -n 's|.*/etcd:||p')
  have=$(awk '$1 == "go.etcd.io/etcd/server/v3" && $2 ~ /^v/ {print $2; exit}' "${NODEPLUG_ROOT}/go.mod")
  [[ -n "${want}" ]] || np::die "kubeadm config images list names no etcd image" "rebuild kubeadm (hack/build.sh)"
  [[ -z "${have}" || "${want}" == "${have#v}-"* ]] ||
    np::die "kubeadm ${KUBE_VERSION} asks for etcd ${want}; the pinned etcd is ${have}" "make the pins agree (hack/update-pin.sh)"
  echo "${want}"
}

# np::kubeadm_images::pause_tag: the pause tag kubeadm asks for; the image
# is nodeplug's pause (build/pause), which does what upstream's does.
np::kubeadm_images::pause_tag() {
  "${BIN_DIR}/kubeadm" config images list --kubernetes-version "${KUBE_VERSION}" 2>/dev/null | sed -n 's|.*/pause:||p'
}

# np::kubeadm_images::coredns_tag: the CoreDNS tag kubeadm asks for, which
# must be the release hack/tools/coredns pins.
np::kubeadm_images::coredns_tag() {
  local want have
  want=$("${BIN_DIR}/kubeadm" config images list --kubernetes-version "${KUBE_VERSION}" 2>/dev/null | sed -n 's|.*/coredns:||p')
  have=$(np::pinned_version coredns github.com/coredns/coredns)
  [[ -n "${want}" && "${want}" == "${have}" ]] ||
    np::die "kubeadm ${KUBE_VERSION} asks for CoreDNS ${want:-?}; hack/tools/coredns pins ${have:-?}" "pin the release kubeadm names in hack/tools/coredns/go.mod"
  echo "${want}"
}
