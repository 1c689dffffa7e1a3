//go:build tools

// Package tools pins external-provisioner, the CSI sidecar that provisions
// the local cluster's default StorageClass (deploy/csi-hostpath), in a module
// of its own: its go.mod replaces every k8s.io staging module with its own
// release, which neither nodeplug's module graph nor `go install mod@version`
// accepts. The replace directives in go.mod are external-provisioner's own at
// the pinned tag; hack/lib/default-storageclass.sh builds the command from
// this directory.
package tools

import (
	_ "github.com/kubernetes-csi/external-provisioner/v5/cmd/csi-provisioner"
)
