#!/usr/bin/env bash
# np::pki::generate writes the local cluster's CA, serving and client
# certificates, the service-account key pair and kubeconfigs with openssl.

np::pki::cert() { # NAME CN ORG [SANS]
  local name=$1 cn=$2 org=$3 sans=${4:-} dir=${LOCAL_UP_DIR}/pki subj
  subj="/CN=${cn}"
  [[ -n "${org}" ]] && subj="/O=${org}${subj}"
  openssl req -new -newkey rsa:2048 -nodes -keyout "${dir}/${name}.key" -subj "${subj}" \
    -out "${dir}/${name}.csr" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [[ -n "${sans}" ]]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=${sans}"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"${dir}/${name}.ext"
  openssl x509 -req -in "${dir}/${name}.csr" -CA "${dir}/ca.crt" -CAkey "${dir}/ca.key" -CAcreateserial \
    -days 365 -extfile "${dir}/${name}.ext" -out "${dir}/${name}.crt" 2>/dev/null
}

np::pki::kubeconfig() { # NAME
  local name=$1 dir=${LOCAL_UP_DIR}/pki
  cat >"${dir}/${name}.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- cluster: {certificate-authority: ${dir}/ca.crt, server: "https://127.0.0.1:${APISERVER_PORT}"}
  name: local
users:
- name: ${name}
  user: {client-certificate: ${dir}/${name}.crt, client-key: ${dir}/${name}.key}
contexts:
- context: {cluster: local, user: ${name}}
  name: local
current-context: local
KC
}

# np::pki::ca: the cluster's CA (pki/ca.crt, ca.key).
np::pki::ca() {
  local dir=${LOCAL_UP_DIR}/pki
  mkdir -p "${dir}"
  command -v openssl >/dev/null || np::die "openssl is missing" "apt-get install openssl"
  openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "${dir}/ca.key" -subj "/CN=nodeplug-local-ca" \
    -days 365 -out "${dir}/ca.crt" 2>/dev/null || np::die "openssl could not create the CA"
}

np::pki::generate() {
  local dir=${LOCAL_UP_DIR}/pki
  np::pki::ca
  openssl genrsa -out "${dir}/sa.key" 2048 2>/dev/null
  openssl rsa -in "${dir}/sa.key" -pubout -out "${dir}/sa.pub" 2>/dev/null
  np::pki::cert apiserver kube-apiserver "" \
    "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.0.0.1,IP:${NODE_IP}"
  np::pki::cert kubelet-serving "${NODE_NAME}" "" "DNS:${NODE_NAME},DNS:localhost,IP:127.0.0.1,IP:${NODE_IP}"
  np::pki::cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  np::pki::cert admin admin system:masters
  np::pki::cert kube-controller-manager system:kube-controller-manager ""
  np::pki::cert kube-scheduler system:kube-scheduler ""
  # system:kube-proxy is bound to the system:node-proxier role by default.
  np::pki::cert kube-proxy system:kube-proxy ""
  np::pki::cert kubelet "system:node:${NODE_NAME}" system:nodes
  for name in admin kube-controller-manager kube-scheduler kube-proxy kubelet; do
    np::pki::kubeconfig "${name}"
  done
  rm -f "${dir}"/*.csr "${dir}"/*.ext
}
