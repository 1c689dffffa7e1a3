#!/usr/bin/env bash
# The services of a node of a multi-node local cluster, and SSH into the
# nodes and the control plane. Each node's containerd, kubelet, kube-proxy
# and sshd are units in systemd's syntax in the node's
# /run/nodeplug/systemd, run by hack/tools/systemctl (the node's
# /usr/local/sbin/systemctl): `systemctl stop|start|restart kubelet` and
# `systemctl show kubelet --property ActiveState --value` act as on a
# kubeadm node, over SSH too. Each unit names its host pid file
# (X-HostPIDFile) and log, so local-down and the tests find the process
# however it was last started. docs/local-cluster.md states the contract.
# Source it after preflight.sh and nodes.sh.

SSH_DIR=${LOCAL_UP_DIR}/ssh
# LOCAL_UP_SSH=false: no SSH servers (the nodes keep their services).
LOCAL_UP_SSH=${LOCAL_UP_SSH:-true}

# np::services::dir I: node I's unit directory, as the host sees it.
np::services::dir() { echo "$(np::nodes::dir "$1")/run/nodeplug/systemd"; }

# np::services::unit I NAME DESCRIPTION STOP_TIMEOUT RESTART ENV ARGV...:
# writes node I's unit NAME (RESTART: systemd's Restart=); its log and host
# pid file are those of the component NAME-<node> (${LOCAL_UP_DIR}/logs,
# ${LOCAL_UP_DIR}/pids).
np::services::unit() {
  local i=$1 unit=$2 desc=$3 timeout=$4 restart=$5 env=$6 name w exec=()
  shift 6
  name=$(np::nodes::name "${i}")
  for w in "$@"; do
    exec+=("\"${w//\"/\\\"}\"")
  done
  mkdir -p "$(np::services::dir "${i}")"
  cat >"$(np::services::dir "${i}")/${unit}.service" <<UNIT
[Unit]
Description=${desc}

[Service]
${env:+Environment=\"${env}\"}
ExecStart=${exec[*]}
StandardOutput=append:${LOCAL_UP_DIR}/logs/${unit}-${name}.log
StandardError=inherit
TimeoutStopSec=${timeout}
Restart=${restart}
RestartSec=1s
X-HostPIDFile=${LOCAL_UP_DIR}/pids/${unit}-${name}
UNIT
}

# np::services::write I: node I's units. containerd and kube-proxy start
# again when they exit, as kubeadm's containerd unit and kube-proxy's
# DaemonSet do (kube-proxy exits when its Node is deleted); the kubelet
# does not, so that a crash fails the tests instead of being hidden.
np::services::write() {
  local i=$1 name dir
  name=$(np::nodes::name "${i}") dir=$(np::nodes::dir "${i}")
  [[ -n "${NODES_KUBELET_PATH:-}" ]] || np::die "NODES_KUBELET_PATH is not set" "set it once with np::cluster::kubelet_path"
  # local-up's nodes see the host's /etc and /usr: only their own units
  # count, never a kubelet package's drop-in the host may have.
  mkdir -p "$(np::services::dir "${i}")"
  echo /run/nodeplug/systemd >"$(np::services::dir "${i}")/unit-path"
  # PATH: containerd starts the runc shim it finds first.
  np::services::unit "${i}" containerd "containerd container runtime" 30s always "PATH=${PATH}" \
    "${CONTAINERD_BIN_DIR}/containerd" --config "${dir}/containerd.toml"
  # shellcheck disable=SC2086 # KUBELET_EXTRA_FLAGS is a list of flags.
  np::services::unit "${i}" kubelet "kubelet: The Kubernetes Node Agent (nodeplug)" 30s no "PATH=${NODES_KUBELET_PATH}" \
    "${BIN_DIR}/kubelet" --config "${dir}/kubelet.yaml" --kubeconfig "${dir}/kubelet.kubeconfig" \
    --hostname-override "${name}" --node-ip "$(np::nodes::ip "${i}")" ${KUBELET_EXTRA_FLAGS}
  np::services::unit "${i}" kube-proxy "kube-proxy" 30s always "" "${BIN_DIR}/kube-proxy" --config "${dir}/kube-proxy.yaml"
  if [[ "${LOCAL_UP_SSH}" != false ]]; then
    np::ssh::config "${dir}/sshd_config" "$(np::nodes::ip "${i}")" /run/sshd.pid
    mkdir -p "${dir}/run/sshd"
    np::services::unit "${i}" ssh "OpenBSD Secure Shell server" 10s on-failure "" /usr/sbin/sshd -D -e -f "${dir}/sshd_config"
  fi
}

# np::services::host_proc I: mounts the host's /proc at the unit
# directory's hostproc in node I (mounted by a process of the host's PID
# namespace, so it lists the host's PIDs): systemctl finds there the host
# PID of a service it started, for its X-HostPIDFile.
np::services::host_proc() {
  local init hp=/run/nodeplug/systemd/hostproc
  init=$(np::nodes::init_pid "$1") || np::die "node $(np::nodes::name "$1") is not running"
  mkdir -p "$(np::services::dir "$1")/hostproc"
  nsenter --target "${init}" --mount -- mount -t proc -o nosuid,nodev,noexec proc "${hp}" ||
    np::die "mounting the host's /proc in node $(np::nodes::name "$1") failed"
}

# np::services::systemctl I ARGS...: systemctl in node I.
np::services::systemctl() {
  local i=$1
  shift
  np::nodes::in "${i}" "${BIN_DIR}/systemctl" "$@"
}

# np::services::start I UNIT: starts UNIT on node I and logs its host PID.
np::services::start() {
  local name
  name=$(np::nodes::name "$1")
  np::services::systemctl "$1" start "$2" ||
    np::die "systemctl start $2 failed on node ${name}" "see ${LOCAL_UP_DIR}/logs/$2-${name}.log"
  np::log "started $2-${name} (pid $(cat "${LOCAL_UP_DIR}/pids/$2-${name}" 2>/dev/null)), log ${LOCAL_UP_DIR}/logs/$2-${name}.log"
}

# np::ssh::keys: the cluster's SSH keys: the client key upstream's e2e
# framework reads (KUBE_SSH_KEY_PATH), the servers' host key, and the
# authorized_keys and known_hosts files that name them. LOCAL_UP_DIR and
# every directory above it are root's (np::preflight::local_up_dir), as
# the sshds' StrictModes also demands of authorized_keys' directories.
np::ssh::keys() {
  [[ "${LOCAL_UP_SSH}" != false ]] || return 0
  command -v sshd >/dev/null || [[ -x /usr/sbin/sshd ]] || np::die "sshd is missing" "apt-get install openssh-server (make local-up installs it)"
  mkdir -p "${SSH_DIR}"
  chmod 700 "${SSH_DIR}"
  ssh-keygen -q -t ed25519 -N '' -C "nodeplug-local-up" -f "${SSH_DIR}/id_ed25519" </dev/null >/dev/null
  ssh-keygen -q -t ed25519 -N '' -C "nodeplug-local-up-host" -f "${SSH_DIR}/ssh_host_ed25519_key" </dev/null >/dev/null
  cp "${SSH_DIR}/id_ed25519.pub" "${SSH_DIR}/authorized_keys"
  : >"${SSH_DIR}/known_hosts"
}

# np::ssh::config FILE ADDRESS PIDFILE: an sshd configuration that listens
# on ADDRESS:22 only and lets in the cluster's key, as root, and nothing
# else; with StrictModes, sshd ignores an authorized_keys that it or a
# directory above it lets anyone but root change.
np::ssh::config() {
  echo "$2 $(cut -d' ' -f1,2 "${SSH_DIR}/ssh_host_ed25519_key.pub")" >>"${SSH_DIR}/known_hosts"
  cat >"$1" <<CONF
ListenAddress $2:22
HostKey ${SSH_DIR}/ssh_host_ed25519_key
PidFile $3
AuthorizedKeysFile ${SSH_DIR}/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes yes
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowTcpForwarding no
AllowAgentForwarding no
Subsystem sftp internal-sftp
CONF
}

# np::ssh::start_control_plane: an sshd on 127.0.0.1:22, the address
# upstream's specs take from the kubeconfig for the control plane, in a
# mount namespace of its own in which upstream's default flex plugin dir
# is the kube-controller-manager's (${FLEX_DIR}): a driver installed there
# over SSH is the controller-manager's to discover.
np::ssh::start_control_plane() {
  [[ "${LOCAL_UP_SSH}" != false ]] || return 0
  local default=/usr/libexec/kubernetes/kubelet-plugins/volume/exec holder
  holder=$(np::preflight::port_holder 22)
  if [[ -n "${holder}" ]]; then
    np::warn "no SSH into the control plane: port 22 is taken by ${holder}; upstream's specs that install a flex driver on the control plane will fail (stop that sshd to have it)"
    return 0
  fi
  np::ssh::config "${LOCAL_UP_DIR}/sshd_config" 127.0.0.1 "${LOCAL_UP_DIR}/sshd.pid"
  [[ -d /run/sshd ]] || np::nodes::mkdir_host /run/sshd
  np::cluster::start sshd unshare --mount --propagation slave -- bash -c \
    "mount --bind '${FLEX_DIR}' '${default}' && exec /usr/sbin/sshd -D -e -f '${LOCAL_UP_DIR}/sshd_config'"
}

# np::ssh::await ADDRESS NAME: waits until root can run a command on
# ADDRESS over SSH with the cluster's key.
np::ssh::await() {
  [[ "${LOCAL_UP_SSH}" != false ]] || return 0
  np::wait_for 30 "SSH on $2 ($1)" ssh -i "${SSH_DIR}/id_ed25519" -o BatchMode=yes -o ConnectTimeout=2 \
    -o UserKnownHostsFile="${SSH_DIR}/known_hosts" -o StrictHostKeyChecking=yes "root@$1" true ||
    np::die "SSH to $2 at $1:22 does not answer" "see ${LOCAL_UP_DIR}/logs/ssh-$2.log or sshd.log; is another sshd on port 22 of that address?"
}
