// Package crd embeds the CustomResourceDefinitions of the localpv.nodeplug.io
// API, so that installers and tests use the same bytes as the manifests.
package crd

import _ "embed"

// NodeDiskStatesYAML is the CRD of localpv.nodeplug.io/v1alpha1 NodeDiskState.
//
//go:embed localpv.nodeplug.io_nodediskstates.yaml
var NodeDiskStatesYAML []byte

// UnwipedDisksYAML is the CRD of localpv.nodeplug.io/v1alpha1 UnwipedDisk,
// the memory of unwiped disks shared by every installation.
//
//go:embed localpv.nodeplug.io_unwipeddisks.yaml
var UnwipedDisksYAML []byte
