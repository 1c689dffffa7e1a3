# nodeplug: see README.md. `make help` lists the targets.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

GO_TEST_FLAGS ?=
E2E_UPSTREAM_FLAGS ?=
LINT_FLAGS ?=
# The nodeplug designs compiled into the kubelet and kube-controller-manager
# by `make build`: all, none, or some of flexdiscovery mountpods pluginwatcher localpvcheck
# (docs/drop-in.md, "Choosing designs at build time").
DESIGNS ?= $(or $(NODEPLUG_DESIGNS),all)

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build every binary into _output/bin; DESIGNS='flexdiscovery pluginwatcher' (or none) compiles only those nodeplug designs in (default all).
	NODEPLUG_DESIGNS="$(DESIGNS)" hack/build.sh

.PHONY: release
release: ## Versioned tarballs of the binaries for linux/amd64 and arm64, the images as OCI archives (kube-controller-manager among them), the kind-readable kubernetes-server-linux-<arch>.tar.gz, the manifests and the Helm charts, with SHA256SUMS, into _output/release/<version> (RELEASE_VERSION=v1.2.3; RELEASE_ONLY=small skips the kubelet and controller-manager; RELEASE_REGISTRY=host/path [RELEASE_REGISTRY_CA=ca.crt] then pushes the images and the charts there).
	hack/release.sh

.PHONY: local-up
local-up: ## Bring up a real cluster running nodeplug's kubelet and kube-controller-manager (NODES=3: three nodes).
	hack/local-up-cluster.sh

.PHONY: kubeadm-up
kubeadm-up: ## A kubeadm cluster of NODES=3 namespaced nodes with nodeplug installed by docs/install.md, its control plane images from the local registry.
	hack/kubeadm-up.sh

.PHONY: kubeadm-down
kubeadm-down: ## Stop the kubeadm cluster and clean up everything it left (the same as local-down).
	hack/local-down.sh

.PHONY: local-load
local-load: ## Push an image archive (IMAGE=app.tar: docker save, or an OCI layout tar) into the local cluster's registry, from which every node pulls it (NAME=localhost:5000/team/app:1 to rename).
	hack/local-load.sh

.PHONY: local-down
local-down: ## Stop the local cluster and clean up everything it left.
	hack/local-down.sh

.PHONY: test
test: ## Unit tests (with -race) of pkg/, cmd/ and the staging modules.
	hack/test.sh $(GO_TEST_FLAGS)

.PHONY: test-integration
test-integration: ## Integration tests against a real kube-apiserver and etcd.
	hack/test-integration.sh $(GO_TEST_FLAGS)

.PHONY: test-e2e
test-e2e: ## local-up with three nodes (NODES=1: one), the e2e suite against it, local-down (also on failure).
	hack/e2e.sh $(GO_TEST_FLAGS)

.PHONY: test-e2e-kubeadm
test-e2e-kubeadm: ## kubeadm-up NODES=3 (nodeplug installed by docs/install.md), the e2e tier's focused set on it with E2E_CLUSTER=existing (a test of each design at least), then local-down (also on failure).
	hack/e2e-kubeadm.sh $(GO_TEST_FLAGS)

.PHONY: test-e2e-upstream
test-e2e-upstream: ## Upstream's e2e storage specs, CI's set (a few of every group), on a 3-node local cluster, then local-down (also on failure).
	hack/e2e-upstream.sh $(E2E_UPSTREAM_FLAGS)

.PHONY: test-e2e-upstream-full
test-e2e-upstream-full: ## Every group of upstream's e2e storage specs that docs/e2e-upstream.md lists, on 3 nodes (about 80 minutes).
	E2E_UPSTREAM_SET=full hack/e2e-upstream.sh $(E2E_UPSTREAM_FLAGS)

.PHONY: verify
verify: ## gofmt, go vet, the no-design build's flags against upstream's and every design subset compiling, golangci-lint, the go.mod pin, no build outputs or big files in git, the Helm charts' copies, make release's checks on a small made-up release, shell syntax.
	hack/verify.sh

.PHONY: lint
lint: ## golangci-lint with logcheck only (part of verify); LINT_FLAGS='--fix' to apply fixes.
	hack/verify-golangci-lint.sh $(LINT_FLAGS)

.PHONY: update
update: ## Regenerate generated files (the go.mod replace block, the Helm charts' copies of the CRDs and admission policies and their tidy go.mod).
	hack/update-pin.sh
	hack/update-helm-chart.sh
