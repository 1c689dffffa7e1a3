// Package dirwatchtest holds test doubles of package dirwatch: Fake, a
// Watcher whose events the test sends, for the unit tests of callers, and
// InjectFS, a real fsnotify watcher that drops events, injects errors and
// fails watches on demand. Both plug into a caller through its
// dirwatch.NewFunc seam: pass Fake.New or InjectFS.New.
package dirwatchtest
