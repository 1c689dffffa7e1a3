// Package config parses and validates the provisioner's ConfigMap. The format
// follows the upstream sig-storage-local-static-provisioner: each key of the
// ConfigMap is a file in the mounted directory, and storageClassMap maps a
// StorageClass name to a MountConfig.
package config
