// Package options holds the flags of each local-volume-provisioner
// subcommand: MasterOptions (master.go), WatcherOptions (watcher.go), and
// DiscoverOptions and CleanupOptions for the Job entrypoints, whose flags the
// master sets (jobs.go). Each has a New*Options constructor with the
// defaults, AddFlags and Validate.
package options
