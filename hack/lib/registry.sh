#!/usr/bin/env bash
# The local cluster's OCI registry (docs/local-cluster.md, "The registry"):
# distribution's registry (hack/tools/registry, pinned by its go.mod)
# serving TLS with a certificate of the cluster's CA, on the host's
# loopback and, with NODES > 1, on the nodes' bridge. Images are named
# ${LOCAL_REGISTRY}/... (localhost:5000, as kind's local-registry recipe
# names its own): the host pushes to localhost:5000, and every node's
# containerd resolves that name to the registry through a hosts.toml
# (np::registry::hosts_toml), trusting the cluster's CA.

REGISTRY_PORT=${REGISTRY_PORT:-5000}
LOCAL_REGISTRY=localhost:${REGISTRY_PORT}
CLUSTER_PORTS+=("${REGISTRY_PORT}")
# The version local-up gives the chart it pushes (its image is dev).
LOCAL_CHART_VERSION=0.0.0-dev

# np::registry::node_address: where a node's containerd reaches the
# registry: the host's bridge address for namespaced nodes, the loopback
# for the node on the host (NODES=1).
np::registry::node_address() {
  if ((${NODES:-1} > 1)); then
    echo "${NODE_HOST_IP}:${REGISTRY_PORT}"
  else
    echo "127.0.0.1:${REGISTRY_PORT}"
  fi
}

# np::registry::cert writes the registry's serving certificate, signed by
# the cluster's CA, for localhost, the loopback and the bridge address.
np::registry::cert() {
  np::pki::cert registry nodeplug-registry "" "DNS:localhost,IP:127.0.0.1,IP:${NODE_HOST_IP:-198.51.100.1}"
}

# np::registry::hosts_toml DIR: containerd's registry host configuration
# below DIR (its config_path): ${LOCAL_REGISTRY} is pulled from the
# registry's node address over TLS, trusting the cluster's CA only.
np::registry::hosts_toml() {
  local dir=$1/${LOCAL_REGISTRY}
  mkdir -p "${dir}"
  cat >"${dir}/hosts.toml" <<TOML
server = "https://${LOCAL_REGISTRY}"

[host."https://$(np::registry::node_address)"]
  capabilities = ["pull", "resolve"]
  ca = "${LOCAL_UP_DIR}/pki/ca.crt"
TOML
}

# np::registry::start starts the registry and waits until it answers.
np::registry::start() {
  local listen=(-listen "127.0.0.1:${REGISTRY_PORT}")
  ((NODES == 1)) || listen+=(-listen "${NODE_HOST_IP}:${REGISTRY_PORT}")
  mkdir -p "${LOCAL_UP_DIR}/registry"
  np::cluster::start registry "${BIN_DIR}/registry" -root "${LOCAL_UP_DIR}/registry" \
    -cert "${LOCAL_UP_DIR}/pki/registry.crt" -key "${LOCAL_UP_DIR}/pki/registry.key" "${listen[@]}"
  np::cluster::await registry 30 curl -sf --cacert "${LOCAL_UP_DIR}/pki/ca.crt" "https://${LOCAL_REGISTRY}/v2/"
}

# np::registry::push ARCHIVE [REFERENCE]: pushes an image archive
# (docker-archive or OCI layout of one index) to the registry; prints the
# reference pushed. Without REFERENCE the archive's name is kept on
# ${LOCAL_REGISTRY}.
np::registry::push() {
  "${BIN_DIR}/oci-push" -ca "${LOCAL_UP_DIR}/pki/ca.crt" -registry "${LOCAL_REGISTRY}" "$@"
}

# np::registry::push_images pushes every image local-up built
# (${LOCAL_UP_DIR}/images/*.tar) under its own name on ${LOCAL_REGISTRY}.
np::registry::push_images() {
  local f
  for f in "${LOCAL_UP_DIR}"/images/*.tar; do
    np::registry::push "${f}" >>"${LOCAL_UP_DIR}/logs/registry-push.log" ||
      np::die "pushing ${f##*/} to the local registry failed" "see ${LOCAL_UP_DIR}/logs/registry.log"
  done
  np::log "images pushed to ${LOCAL_REGISTRY}"
}

# np::registry::push_chart DIR CHART_VERSION IMAGE REPOSITORY [CA]:
# packages the Helm chart in DIR as CHART_VERSION with its image defaulting
# to IMAGE, and pushes it to oci://REPOSITORY/charts, trusting CA (default:
# the system's roots). A chart pulled from a registry then runs that
# registry's image with no --set.
np::registry::push_chart() {
  local src=$1 version=$2 image=$3 repo=$4 ca=${5:-} work rc=0 ca_args=()
  [[ -z "${ca}" ]] || ca_args=(--ca-file "${ca}")
  work=$(mktemp -d)
  cp -r "${src}" "${work}/chart"
  sed -i -E "s|^image: .*|image: ${image}|" "${work}/chart/values.yaml"
  if ! grep -qxF "image: ${image}" "${work}/chart/values.yaml"; then
    rm -rf "${work}"
    np::die "${src}/values.yaml has no top-level image: line to set" "keep the image value at the top level"
  fi
  { "${BIN_DIR}/helm" package "${work}/chart" --version "${version}" -d "${work}" >/dev/null &&
    "${BIN_DIR}/helm" push "${work}/$(basename "${src}")-${version}.tgz" "oci://${repo}/charts" "${ca_args[@]}"; } \
    >"${work}/out" 2>&1 || rc=$?
  ((rc == 0)) || cat "${work}/out" >&2
  rm -rf "${work}"
  ((rc == 0)) || np::die "pushing the chart ${src##*/} to oci://${repo}/charts failed (helm's output above)"
}
