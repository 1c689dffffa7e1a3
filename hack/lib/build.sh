#!/usr/bin/env bash
# np::build::all builds every binary the local cluster and the tests need
# into ${BIN_DIR}: nodeplug's own commands, upstream's kube-apiserver,
# kube-scheduler, kube-proxy, kubectl and kubeadm (make kubeadm-up), and etcd, all from the module
# graph pinned by go.mod (so from the Go module proxy and nothing else).
# NODEPLUG_DESIGNS chooses the nodeplug designs compiled into the kubelet
# and the kube-controller-manager (hack/lib/designs.sh; default all).

source "$(dirname "${BASH_SOURCE[0]}")/designs.sh"

np::build::ldflags() {
  local major minor commit
  major=$(cut -d. -f1 <<<"${KUBE_VERSION#v}")
  minor=$(cut -d. -f2 <<<"${KUBE_VERSION#v}")
  commit=$(git -C "${NODEPLUG_ROOT}" describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
  local v=k8s.io/component-base/version
  printf '%s ' "-X ${v}.gitVersion=${KUBE_VERSION}" "-X ${v}.gitMajor=${major}" "-X ${v}.gitMinor=${minor}" \
    "-X ${v}.gitTreeState=clean" "-X ${v}.buildDate=1970-01-01T00:00:00Z" \
    "-X github.com/nodeplug/nodeplug/pkg/version.gitVersion=v0.1.0-${commit}"
}

np::build::all() {
  mkdir -p "${BIN_DIR}"
  local started=${SECONDS} tags
  tags=$(np::designs::tags "${NODEPLUG_DESIGNS:-all}") || exit 1
  np::log "building binaries into ${BIN_DIR} (a cold build takes 8-12 minutes on 2 cores); nodeplug designs: ${NODEPLUG_DESIGNS:-all}${tags:+ (tags ${tags})}"
  (
    cd "${NODEPLUG_ROOT}"
    go build -tags "${tags}" -ldflags "$(np::build::ldflags)" -o "${BIN_DIR}/" \
      ./cmd/kubelet ./cmd/kube-controller-manager ./hack/tools/etcd ./hack/tools/mkimage \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy \
      k8s.io/kubernetes/cmd/kubectl k8s.io/kubernetes/cmd/kubeadm &&
    # Binaries that go into images (build/*) are static: the images have no libc
    # (the mount-utilities image carries the host's libc for the host's tools only).
    # mount-utilities-upgrade is static so that it can be copied to any machine.
    CGO_ENABLED=0 go build -ldflags "-s -w" -o "${BIN_DIR}/" \
      ./build/pause ./build/csi-hostpath ./build/dra-test-driver ./cmd/flexvolume-installer \
      ./cmd/local-volume-provisioner ./cmd/mount-utilities-upgrade ./hack/tools/nodeinit ./hack/tools/systemctl &&
    CGO_ENABLED=0 go build -ldflags "-s -w" -o "${BIN_DIR}/mount-utilities-init" ./build/mount-utilities/init &&
    CGO_ENABLED=0 go build -ldflags "-s -w" -o "${BIN_DIR}/nodeplug-fuse-loopback" ./build/mount-utilities/fuse-loopback
  ) || np::die "go build failed (see the compiler output above)" \
    "run 'go build ./...' to reproduce; check that the Go module proxy is reachable (go mod download)"
  np::build::containerd
  np::build::crictl
  np::build::csi_provisioner
  np::build::dra_example_driver
  np::build::registry
  np::build::coredns
  np::log "binaries built in $((SECONDS - started)) s"
}

# np::build::csi_provisioner builds external-provisioner, the sidecar of the
# default StorageClass's driver (deploy/csi-hostpath), static, from the
# module hack/tools/csi-provisioner pins it in (its own go.mod: it replaces
# the k8s.io modules with older releases than nodeplug's). About 100 s cold
# on 2 cores, 2 s warm.
np::build::csi_provisioner() {
  local dir=${NODEPLUG_ROOT}/hack/tools/csi-provisioner version
  version=$(np::pinned_version csi-provisioner github.com/kubernetes-csi/external-provisioner/v5)
  (
    cd "${dir}" &&
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${version}" -o "${BIN_DIR}/csi-provisioner" \
        github.com/kubernetes-csi/external-provisioner/v5/cmd/csi-provisioner
  ) || np::die "building external-provisioner ${version} failed (see the compiler output above)" \
    "run 'go build github.com/kubernetes-csi/external-provisioner/v5/cmd/csi-provisioner' in hack/tools/csi-provisioner; check that the Go module proxy is reachable"
}

# np::build::dra_example_driver builds kubernetes-sigs/dra-example-driver's
# three commands (dra-example-kubeletplugin, -controller, -webhook), static,
# from the release hack/tools/dra-example-driver pins (served by the Go
# module proxy). The e2e tier deploys the driver with its own chart
# (build/dra-example-driver). About 80 s cold on 2 cores, 2 s warm.
np::build::dra_example_driver() {
  local dir=${NODEPLUG_ROOT}/hack/tools/dra-example-driver version
  version=$(np::pinned_version dra-example-driver sigs.k8s.io/dra-example-driver)
  (
    cd "${dir}" &&
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${BIN_DIR}/" \
        sigs.k8s.io/dra-example-driver/cmd/dra-example-kubeletplugin \
        sigs.k8s.io/dra-example-driver/cmd/dra-example-controller \
        sigs.k8s.io/dra-example-driver/cmd/dra-example-webhook
  ) || np::die "building dra-example-driver ${version} failed (see the compiler output above)" \
    "run 'go build sigs.k8s.io/dra-example-driver/cmd/...' in hack/tools/dra-example-driver; check that the Go module proxy is reachable"
}

# np::build::crictl builds cri-tools' crictl, static, at the release
# hack/tools/cri-tools pins, into ${BIN_DIR}: every node of the local
# cluster has it, as kubeadm and kind nodes do (np::nodes::crictl).
np::build::crictl() {
  local version
  version=$(np::pinned_version cri-tools sigs.k8s.io/cri-tools)
  (
    cd "${NODEPLUG_ROOT}/hack/tools/cri-tools" &&
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=${version}" \
        -o "${BIN_DIR}/crictl" sigs.k8s.io/cri-tools/cmd/crictl
  ) || np::die "building crictl ${version} failed (see the compiler output above)" \
    "run 'go build sigs.k8s.io/cri-tools/cmd/crictl' in hack/tools/cri-tools; check that the Go module proxy is reachable"
}

# np::build::containerd builds the local cluster's container runtime,
# containerd with its runc shim and ctr, at the release
# hack/tools/containerd pins, into ${CONTAINERD_BIN_DIR} (a directory of
# their own, first in the PATH of every script and of containerd, so that
# containerd starts this shim). No btrfs, devmapper or zfs snapshotter: the
# cluster uses overlayfs. About 60 s cold on 2 cores, 2 s warm.
np::build::containerd() {
  local dir=${NODEPLUG_ROOT}/hack/tools/containerd version
  version=$(np::pinned_version containerd github.com/containerd/containerd/v2)
  mkdir -p "${CONTAINERD_BIN_DIR}"
  (
    cd "${dir}" &&
      go build -trimpath -tags no_btrfs,no_devmapper,no_zfs \
        -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=${version}" -o "${CONTAINERD_BIN_DIR}/" \
        github.com/containerd/containerd/v2/cmd/containerd \
        github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
        github.com/containerd/containerd/v2/cmd/ctr
  ) || np::die "building containerd ${version} failed (see the compiler output above)" \
    "run 'go build github.com/containerd/containerd/v2/cmd/...' in hack/tools/containerd; check that the Go module proxy is reachable"
}

# np::build::coredns builds the local cluster's DNS server (deploy/coredns),
# static, from hack/tools/coredns: CoreDNS at the release its go.mod pins,
# with only the plugins a kubeadm Corefile uses (its own main.go; CoreDNS's
# main would compile every cloud SDK its plugins import). About 180 s cold
# (an empty GOCACHE, modules downloaded, 2 cores shared with other builds),
# 2 s warm.
np::build::coredns() {
  local version
  version=$(np::pinned_version coredns github.com/coredns/coredns)
  (
    cd "${NODEPLUG_ROOT}/hack/tools/coredns" &&
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${BIN_DIR}/coredns" .
  ) || np::die "building CoreDNS ${version} failed (see the compiler output above)" \
    "run 'go build .' in hack/tools/coredns; check that the Go module proxy is reachable"
}

# np::build::registry builds the local cluster's registry and its push
# command (hack/tools/registry: distribution's registry and
# go-containerregistry, pinned by its go.mod) into ${BIN_DIR} as registry
# and oci-push (hack/lib/registry.sh). About 70 s cold on 2 cores, 2 s warm.
np::build::registry() {
  (
    cd "${NODEPLUG_ROOT}/hack/tools/registry" &&
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${BIN_DIR}/registry" . &&
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${BIN_DIR}/oci-push" ./push
  ) || np::die "building the registry failed (see the compiler output above)" \
    "run 'go build ./...' in hack/tools/registry; check that the Go module proxy is reachable"
}
