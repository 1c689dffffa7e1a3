// Package testutil holds the helpers a test calls when it cannot run here:
// it needs root, a mount, a loop device or a command the machine lacks.
//
// Outside CI such a test skips, so that `go test` works for a developer
// without root. Under CI=true it fails instead: CI provides those
// capabilities, and a test that silently skips there is a test that never
// runs. Every such skip in nodeplug goes through MissingCapability.
package testutil
