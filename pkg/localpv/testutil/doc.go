// Package testutil creates real mounts and loop devices for the node-side
// tests, and removes them when the test ends. It needs root: a test that
// cannot mount or attach a loop device here skips, or fails under CI=true
// (pkg/util/testutil.MissingCapability).
package testutil
