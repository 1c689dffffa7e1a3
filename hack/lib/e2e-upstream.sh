#!/usr/bin/env bash
# The pieces of hack/e2e-upstream.sh: the test binary of upstream's e2e
# storage specs (test/e2e_upstream), the images those specs run, under the
# names upstream gives them (hack/tools/e2eimages), and their import into
# every node's containerd. No registry: agnhost is built from the pinned
# k8s.io/kubernetes module and given the host's tools, nginx is Debian's,
# busybox is the host's busybox-static, pause is nodeplug's (build/pause);
# build/e2e-images has the recipes. Source after init.sh, cluster.sh,
# images.sh and nodes.sh.

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

# np::e2e_upstream::build_images DIR: DIR/{agnhost,busybox,nginx,pause}.tar
# (build/e2e-images/README.md says what is in them).
np::e2e_upstream::build_images() {
  local dir=$1 bb
  mkdir -p "${dir}"
  mapfile -t bb < <(np::images::busybox_args)
  np::e2e_upstream::build_agnhost "${dir}" "${bb[@]}"
  np::e2e_upstream::build_nginx "${dir}" "${bb[@]}"
  "${BIN_DIR}/mkimage" -o "${dir}/busybox.tar" -name "$(np::e2e_upstream::image_ref busybox)" "${bb[@]}" \
    -cmd sh || np::die "building the busybox image failed"
  "${BIN_DIR}/mkimage" -o "${dir}/pause.tar" -name "$(np::e2e_upstream::image_ref pause)" \
    -file "/pause=${BIN_DIR}/pause:0755" -entrypoint /pause || np::die "building the pause image failed"
}

# np::e2e_upstream::build_agnhost DIR BUSYBOX_ARGS...: DIR/agnhost.tar, with
# the programs of build/e2e-images/agnhost/host-packages in /usr ahead of
# busybox's applets in /bin in PATH, as upstream's image has the real
# tools: its host-exec pods run "nsenter --mount=... -- sh -c CMD", and
# busybox's nsenter would run its own sh and applets (its losetup cannot
# list loop devices) instead of the node's; HostPathType Socket runs
# "nc -lU", which busybox's nc lacks.
np::e2e_upstream::build_agnhost() {
  local dir=$1 pkgs out bins tools args
  shift
  mapfile -t pkgs < <(grep -v '^#' "${NODEPLUG_ROOT}/build/e2e-images/agnhost/host-packages")
  out=$(np::images::package_binaries "${pkgs[@]}") ||
    np::die "listing the agnhost image's host programs failed" "see the error above"
  mapfile -t bins <<<"${out}"
  out=$(np::images::host_binary_args "${bins[@]}") || np::die "collecting the agnhost image's host programs failed"
  mapfile -t tools <<<"${out}"
  mapfile -t args < <(np::images::recipe e2e-images/agnhost)
  "${BIN_DIR}/mkimage" -o "${dir}/agnhost.tar" -name "$(np::e2e_upstream::image_ref agnhost)" \
    "$@" "${tools[@]}" "${args[@]}" || np::die "building the agnhost image failed" "see build/e2e-images/README.md"
  # glibc-dns-testing: a glibc userland with a shell, as upstream's is
  # (multiVolume's same-node specs run their pods in it): the same
  # programs, without agnhost as the entrypoint.
  local plain=() k
  for ((k = 0; k < ${#args[@]}; k++)); do
    case "${args[k]}" in
      -entrypoint | -cmd) ((k += 1)) ;;
      -file | -link) [[ "${args[k + 1]}" == /agnhost* ]] || plain+=("${args[k]}" "${args[k + 1]}"); ((k += 1)) ;;
      *) plain+=("${args[k]}") ;;
    esac
  done
  "${BIN_DIR}/mkimage" -o "${dir}/glibc-dns-testing.tar" -name "$(np::e2e_upstream::image_ref glibc-dns-testing)" \
    "$@" "${tools[@]}" "${plain[@]}" -cmd /bin/sh || np::die "building the glibc-dns-testing image failed" "see build/e2e-images/README.md"
}

# np::e2e_upstream::build_nginx DIR BUSYBOX_ARGS...: DIR/nginx.tar with
# Debian's nginx, unpacked (never installed) from the package
# np::e2e_upstream::nginx_deb fetches.
np::e2e_upstream::build_nginx() {
  local dir=$1 deb stage=${1}/nginx-deb out libs args
  shift
  deb=$(np::e2e_upstream::nginx_deb) || exit 1
  rm -rf "${stage}"
  dpkg-deb -x "${deb}" "${stage}" || np::die "unpacking ${deb} failed" "remove it; the next run fetches it again"
  out=$(np::images::library_args "${stage}/usr/sbin/nginx") || np::die "nginx needs shared libraries this host lacks" \
    "apt-get install the libraries named above (libssl3, libpcre2-8-0, zlib1g, libcrypt1)"
  mapfile -t libs <<<"${out}"
  mapfile -t args < <(np::images::recipe e2e-images/nginx)
  "${BIN_DIR}/mkimage" -o "${dir}/nginx.tar" -name "$(np::e2e_upstream::image_ref nginx)" "$@" "${libs[@]}" \
    -file "/usr/sbin/nginx=${stage}/usr/sbin/nginx:0755" "${args[@]}" ||
    np::die "building the nginx image failed" "see build/e2e-images/README.md"
  rm -rf "${stage}"
}

# np::e2e_upstream::nginx_deb: the path of Debian's nginx package in
# ${OUT_DIR}/debs, which "apt-get download" fills the first time (it only
# downloads: the package's scripts never run, no nginx runs on the host).
np::e2e_upstream::nginx_deb() {
  local cache=${OUT_DIR}/debs deb
  deb=$(compgen -G "${cache}/nginx_*.deb" | sort -V | tail -n 1) || true
  if [[ -z "${deb}" ]]; then
    mkdir -p "${cache}"
    (cd "${cache}" && apt-get download -q -o APT::Sandbox::User=root nginx) >"${cache}/apt-download.log" 2>&1 ||
      np::die "apt-get download nginx failed (see ${cache}/apt-download.log)" \
        "run apt-get update; check that Debian's mirror is reachable"
    deb=$(compgen -G "${cache}/nginx_*.deb" | sort -V | tail -n 1) || true
    [[ -n "${deb}" ]] || np::die "apt-get download nginx wrote no nginx_*.deb in ${cache}"
  fi
  echo "${deb}"
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

# np::e2e_upstream::existing_mount_utilities: on an existing cluster, the
# mount utilities DaemonSet it runs (applied from deploy/mount-utilities
# when it has none, as docs/install.md installs it), Ready on every node it
# schedules to.
np::e2e_upstream::existing_mount_utilities() {
  if ! "${BIN_DIR}/kubectl" -n kube-mount get daemonset mount-utilities >/dev/null 2>&1; then
    np::log "the cluster has no kube-mount/mount-utilities DaemonSet: applying deploy/mount-utilities"
    "${BIN_DIR}/kubectl" apply -k "${NODEPLUG_ROOT}/deploy/mount-utilities" >/dev/null ||
      np::die "applying deploy/mount-utilities failed" "see the kubectl error above"
  fi
  np::wait_for 300 "mount-utilities pods" np::e2e_upstream::mount_utilities_ready ||
    np::die "the mount-utilities pods are not Ready on every node" \
      "kubectl -n kube-mount describe pods; the nodes must pull its image (docs/e2e-upstream.md)"
}

# np::e2e_upstream::mount_utilities_ready: whether the DaemonSet's pods are
# Ready on every node it schedules to (one at least).
np::e2e_upstream::mount_utilities_ready() {
  local s
  s=$("${BIN_DIR}/kubectl" -n kube-mount get daemonset mount-utilities \
    -o jsonpath='{.status.numberReady}/{.status.desiredNumberScheduled}') || return 1
  [[ "${s%/*}" == "${s#*/}" && "${s#*/}" -gt 0 ]]
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

