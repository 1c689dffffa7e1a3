#!/usr/bin/env bash
# The local cluster's default StorageClass, as kind ships one:
# deploy/csi-hostpath (the StorageClass "standard", nodeplug's csi-hostpath
# driver and external-provisioner on every node) is applied while the nodes
# come up, and local-up waits until the driver is registered with every
# kubelet (each node's CSINode lists it). DEFAULT_STORAGECLASS=false leaves
# it out. Source after init.sh, cluster.sh, images.sh and nodes.sh.

DEFAULT_STORAGECLASS=${DEFAULT_STORAGECLASS:-true}
CSI_HOSTPATH_DRIVER=hostpath.csi.nodeplug.io

# np::default_sc::enabled: whether local-up deploys the default class; any
# value but true or false is an error.
np::default_sc::enabled() {
  case "${DEFAULT_STORAGECLASS}" in
  true) return 0 ;;
  false) return 1 ;;
  esac
  np::die "DEFAULT_STORAGECLASS=${DEFAULT_STORAGECLASS} is neither true nor false" \
    "unset it (the default, true, deploys deploy/csi-hostpath) or set DEFAULT_STORAGECLASS=false"
}

# np::default_sc::images DIR: DIR/csi-hostpath.tar and DIR/csi-provisioner.tar
# from build/csi-hostpath and build/csi-provisioner, with the binaries
# np::build::all built.
np::default_sc::images() {
  local dir=$1 name args
  np::default_sc::enabled || return 0
  for name in csi-hostpath csi-provisioner; do
    [[ -x "${BIN_DIR}/${name}" ]] || np::die "${BIN_DIR}/${name} is missing" \
      "run hack/build.sh (or local-up without SKIP_BUILD=1), or set DEFAULT_STORAGECLASS=false"
    mapfile -t args < <(np::images::recipe "${name}")
    "${BIN_DIR}/mkimage" -o "${dir}/${name}.tar" "${args[@]}" ||
      np::die "building the ${name} image failed" "see build/${name}/image.args"
  done
}

# np::default_sc::kubelet_dir: the kubelets' root directory as they see it.
np::default_sc::kubelet_dir() {
  if ((NODES > 1)); then echo /var/lib/kubelet; else echo "${LOCAL_UP_DIR}/kubelet"; fi
}

# np::default_sc::registration_dir: where the kubelets take plugin
# registrations: nodeplug's plugin watcher's directory when
# KUBELET_EXTRA_FLAGS turns it on, else upstream's plugin manager's.
np::default_sc::registration_dir() {
  local flag next="" dir=""
  # shellcheck disable=SC2086 # KUBELET_EXTRA_FLAGS is a list of flags.
  for flag in ${KUBELET_EXTRA_FLAGS}; do
    if [[ -n "${next}" ]]; then
      dir=${flag} next=""
      continue
    fi
    case "${flag}" in
    --experimental-plugin-registration-dir=*) dir=${flag#*=} ;;
    --experimental-plugin-registration-dir) next=1 ;;
    esac
  done
  echo "${dir:-$(np::default_sc::kubelet_dir)/plugins_registry}"
}

# np::default_sc::render: deploy/csi-hostpath with the kubelets' root and
# registration directories.
np::default_sc::render() {
  local kdir reg
  kdir=$(np::default_sc::kubelet_dir)
  reg=$(np::default_sc::registration_dir)
  [[ "${reg}" == /* ]] || np::die "the kubelets' plugin registration dir '${reg}' is not absolute" "fix KUBELET_EXTRA_FLAGS"
  "${BIN_DIR}/kubectl" kustomize "${NODEPLUG_ROOT}/deploy/csi-hostpath" |
    sed -e "s#/var/lib/kubelet/plugins_registry_nodeplug#@REGISTRATION@#" -e "s#/var/lib/kubelet#${kdir}#g" \
      -e "s#@REGISTRATION@#${reg}#"
}

# np::default_sc::check_paths: the driver's two unix sockets (its CSI
# endpoint under the kubelet's root and its registration socket) fit the
# 107 bytes Linux allows a socket path; a long LOCAL_UP_DIR with NODES=1
# puts them over, and the driver could not bind them.
np::default_sc::check_paths() {
  local p
  for p in "$(np::default_sc::kubelet_dir)/plugins/${CSI_HOSTPATH_DRIVER}/csi.sock" \
    "$(np::default_sc::registration_dir)/${CSI_HOSTPATH_DRIVER}-reg.sock"; do
    ((${#p} <= 107)) || np::die "the default class's driver socket ${p} is ${#p} bytes, over the 107 a unix socket path may have" \
      "use a shorter LOCAL_UP_DIR of root's (e.g. LOCAL_UP_DIR=/var/lib/nodeplug/local-up), NODES=3, or DEFAULT_STORAGECLASS=false"
  done
}

# np::default_sc::apply: applies the rendered deploy/csi-hostpath; the
# driver's pods start once the nodes are Ready.
np::default_sc::apply() {
  np::default_sc::enabled || return 0
  local out
  out=$(np::default_sc::render) || np::die "rendering deploy/csi-hostpath failed" "run kubectl kustomize deploy/csi-hostpath"
  "${BIN_DIR}/kubectl" apply -f - >/dev/null <<<"${out}" ||
    np::die "applying deploy/csi-hostpath failed" "see the kubectl error above; DEFAULT_STORAGECLASS=false brings the cluster up without it"
  np::log "applied deploy/csi-hostpath (default StorageClass standard, driver ${CSI_HOSTPATH_DRIVER}, registration in $(np::default_sc::registration_dir))"
}

# np::default_sc::registered: how many CSINodes list the driver.
np::default_sc::registered() {
  "${BIN_DIR}/kubectl" get csinodes -o jsonpath='{range .items[*]}{.spec.drivers[*].name}{"\n"}{end}' 2>/dev/null |
    grep -cw -- "${CSI_HOSTPATH_DRIVER}" || true
}

np::default_sc::all_registered() { [[ "$(np::default_sc::registered)" == "${NODES}" ]]; }

# np::default_sc::await: waits until the driver is registered on all
# NODES nodes.
np::default_sc::await() {
  np::default_sc::enabled || return 0
  local started=${SECONDS}
  np::wait_for 90 "csi-hostpath driver on ${NODES} node(s)" np::default_sc::all_registered ||
    np::die "the ${CSI_HOSTPATH_DRIVER} driver is registered on $(np::default_sc::registered) of ${NODES} nodes after 90 s" \
      "kubectl -n csi-hostpath get pods -o wide; kubectl -n csi-hostpath logs ds/csi-hostpath -c hostpath; the kubelets' logs in ${LOCAL_UP_DIR}/logs; DEFAULT_STORAGECLASS=false brings the cluster up without the default class"
  np::log "default StorageClass standard ready ($((SECONDS - started)) s after the nodes)"
}
