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
# KEY (agnhost, busybox, nginx, pause), KUBE_TEST_REPO_LIST applied.
np::e2e_upstream::image_ref() {
  local ref
  ref=$("${BIN_DIR}/e2eimages" | awk -v k="$1" '$1 == k {print $2}')
  [[ -n "${ref}" ]] || np::die "no image reference for ${1}" "run ${BIN_DIR}/e2eimages; rebuild it with hack/e2e-upstream.sh"
  echo "${ref}"
}

# np::e2e_upstream::build_images DIR: DIR/{agnhost,busybox,nginx,pause}.tar.
# agnhost gets busybox's applets in /bin and the host's util-linux nsenter
# in /usr/bin, ahead in PATH, as upstream's image has util-linux's: its
# host-exec pods run "nsenter --mount=... -- sh -c CMD", and busybox's
# nsenter would run its own sh and applets (its losetup cannot list loop
# devices) instead of the node's.
np::e2e_upstream::build_images() {
  local dir=$1 bb nsenter out
  mkdir -p "${dir}"
  mapfile -t bb < <(np::images::busybox_args)
  out=$(np::images::host_binary_args /usr/bin/nsenter) || np::die "util-linux's nsenter is missing" "apt-get install util-linux"
  mapfile -t nsenter <<<"${out}"
  "${BIN_DIR}/mkimage" -o "${dir}/agnhost.tar" -name "$(np::e2e_upstream::image_ref agnhost)" "${bb[@]}" "${nsenter[@]}" \
    -file "/agnhost=${BIN_DIR}/agnhost:0755" -link /agnhost-2=agnhost -dir /uploads \
    -entrypoint /agnhost -cmd pause || np::die "building the agnhost image failed"
  "${BIN_DIR}/mkimage" -o "${dir}/busybox.tar" -name "$(np::e2e_upstream::image_ref busybox)" "${bb[@]}" \
    -cmd sh || np::die "building the busybox image failed"
  # Not nginx: the one selected spec that names this image (volumes "should
  # allow exec of files on the volume") runs /bin/sh, chmod and ls in it.
  "${BIN_DIR}/mkimage" -o "${dir}/nginx.tar" -name "$(np::e2e_upstream::image_ref nginx)" "${bb[@]}" \
    -cmd sh || np::die "building the image named nginx failed"
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
  # The DaemonSet updates OnDelete, so no rollout status: every node's pod Ready.
  np::wait_for 120 "mount-utilities pods" bash -c "[[ \$('${BIN_DIR}/kubectl' -n kube-mount get daemonset mount-utilities \
    -o jsonpath='{.status.numberReady}') == ${NODES} ]]" ||
    np::die "the mount-utilities pods did not become Ready on every node" \
      "kubectl -n kube-mount describe pods; see ${LOCAL_UP_DIR}/logs/kubelet-*.log"
  np::log "mount utilities Ready on every node"
}

# np::e2e_upstream::summary REPORT...: the counts of ginkgo's JSON REPORTs
# (those that exist):
# the specs the focus and skip select, and of those how many passed,
# failed, and skipped themselves (upstream's specs skip when the cluster
# lacks what they need), then the closing line "N passed, N failed, N
# skipped"; the failed and skipped specs with the reason are in
# ${RESULTS}/specs.txt.
np::e2e_upstream::summary() {
  python3 - "$(dirname "$1")/specs.txt" "$@" <<'PY'
import collections, json, os, sys
counts, lines = collections.Counter(), []
suites = []
for report in sys.argv[2:]:
    if os.path.exists(report):
        suites += json.load(open(report))
if not suites:
    sys.exit(1)
for suite in suites:
    for spec in suite.get("SpecReports") or []:
        if spec.get("LeafNodeType") != "It":
            continue
        state, msg = spec.get("State"), (spec.get("Failure") or {}).get("Message", "")
        if state == "skipped" and not msg:
            continue  # not selected by the focus and skip
        state = "failed" if state not in ("passed", "skipped") else state
        counts[state] += 1
        name = " ".join(spec.get("ContainerHierarchyTexts") or []) + " " + spec.get("LeafNodeText", "")
        lines.append(f"{state}\t{name}\t{msg.splitlines()[0] if msg else ''}")
open(sys.argv[1], "w").write("\n".join(sorted(lines)) + "\n")
total = sum(counts.values())
print(f"specs selected: {total}; details in {sys.argv[1]}")
print(f"e2e-upstream: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
PY
}

