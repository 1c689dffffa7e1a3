#!/usr/bin/env bash
# The pieces of hack/e2e-upstream.sh: the test binary of upstream's e2e
# storage specs (test/e2e_upstream), the images those specs run, under the
# names upstream gives them (hack/tools/e2eimages), and their import into
# every node's containerd. No registry: agnhost is built from the pinned
# k8s.io/kubernetes module, busybox is the host's busybox-static, pause is
# nodeplug's (build/pause). Source after init.sh, cluster.sh, images.sh and
# nodes.sh.

E2E_UPSTREAM_TEST=${BIN_DIR}/e2e-upstream.test

# np::e2e_upstream::build: the test binary, agnhost, e2eimages and the
# ginkgo command (which runs the specs in parallel) into ${BIN_DIR}.
np::e2e_upstream::build() {
  local started=${SECONDS}
  (
    cd "${NODEPLUG_ROOT}"
    go test -tags e2e_upstream -c -o "${E2E_UPSTREAM_TEST}" ./test/e2e_upstream &&
      CGO_ENABLED=0 go build -ldflags "-s -w" -o "${BIN_DIR}/agnhost" k8s.io/kubernetes/test/images/agnhost &&
      go build -o "${BIN_DIR}/" ./hack/tools/e2eimages github.com/onsi/ginkgo/v2/ginkgo
  ) || np::die "building upstream's e2e test binary or agnhost failed (see the compiler output above)" \
    "run 'go test -tags e2e_upstream -c ./test/e2e_upstream' to reproduce; check that the Go module proxy is reachable"
  np::log "upstream e2e test binary and agnhost built in $((SECONDS - started)) s"
}

# np::e2e_upstream::image_ref KEY: the reference upstream's specs use for
# KEY (agnhost, busybox, pause), KUBE_TEST_REPO_LIST applied.
np::e2e_upstream::image_ref() {
  local ref
  ref=$("${BIN_DIR}/e2eimages" | awk -v k="$1" '$1 == k {print $2}')
  [[ -n "${ref}" ]] || np::die "no image reference for ${1}" "run ${BIN_DIR}/e2eimages; rebuild it with hack/e2e-upstream.sh"
  echo "${ref}"
}

# np::e2e_upstream::build_images DIR: DIR/{agnhost,busybox,pause}.tar.
# agnhost gets busybox's applets in /bin: its host-exec pods run nsenter
# and sh, which upstream's image has from its base image.
np::e2e_upstream::build_images() {
  local dir=$1 bb
  mkdir -p "${dir}"
  mapfile -t bb < <(np::images::busybox_args)
  "${BIN_DIR}/mkimage" -o "${dir}/agnhost.tar" -name "$(np::e2e_upstream::image_ref agnhost)" "${bb[@]}" \
    -file "/agnhost=${BIN_DIR}/agnhost:0755" -link /agnhost-2=agnhost -dir /uploads \
    -entrypoint /agnhost -cmd pause || np::die "building the agnhost image failed"
  "${BIN_DIR}/mkimage" -o "${dir}/busybox.tar" -name "$(np::e2e_upstream::image_ref busybox)" "${bb[@]}" \
    -cmd sh || np::die "building the busybox image failed"
  "${BIN_DIR}/mkimage" -o "${dir}/pause.tar" -name "$(np::e2e_upstream::image_ref pause)" \
    -file "/pause=${BIN_DIR}/pause:0755" -entrypoint /pause || np::die "building the pause image failed"
}

# np::e2e_upstream::import DIR: loads DIR/*.tar into every node's containerd.
np::e2e_upstream::import() {
  local dir=$1 i f
  for ((i = 1; i <= NODES; i++)); do
    for f in "${dir}"/*.tar; do
      ctr --address "$(np::nodes::sock "${i}")" -n k8s.io images import --no-unpack=false "${f}" >/dev/null ||
        np::die "importing ${f} into node $(np::nodes::name "${i}")'s containerd failed" \
          "see ${LOCAL_UP_DIR}/logs/containerd-$(np::nodes::name "${i}").log"
    done
  done
  np::log "upstream e2e images imported into ${NODES} nodes"
}

# np::e2e_upstream::mount_utilities: deploy/mount-utilities, unchanged
# (each node has its own /var/lib/kubelet), and a Ready pod on every node.
np::e2e_upstream::mount_utilities() {
  "${BIN_DIR}/kubectl" apply -k "${NODEPLUG_ROOT}/deploy/mount-utilities" >/dev/null ||
    np::die "applying deploy/mount-utilities failed" "see the kubectl error above"
  "${BIN_DIR}/kubectl" -n kube-mount rollout status daemonset --timeout=120s >/dev/null ||
    np::die "the mount-utilities pods did not become Ready on every node" \
      "kubectl -n kube-mount describe pods; see ${LOCAL_UP_DIR}/logs/kubelet-*.log"
  np::log "mount utilities Ready on every node"
}

# np::e2e_upstream::summary LOG: "N passed, N failed, N skipped" from
# ginkgo's closing lines in LOG (ANSI colours removed).
np::e2e_upstream::summary() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
    /^Ran [0-9]+ of [0-9]+ Specs/ {ran = $2; total = $4}
    / Passed \| [0-9]+ Failed \|/ {
      for (i = 1; i <= NF; i++) {
        if ($(i) == "Passed") p = $(i - 1)
        if ($(i) == "Failed") f = $(i - 1)
        if ($(i) == "Skipped") s = $(i - 1)
      }
    }
    END {
      if (ran == "") exit 1
      printf "specs: %d run of %d, %d passed, %d failed, %d skipped\n", ran, total, p, f, s
      printf "e2e-upstream: %d passed, %d failed, %d skipped\n", p, f, s
    }'
}
