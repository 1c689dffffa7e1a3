// Package dirwatch watches a directory tree with inotify (through
// github.com/fsnotify/fsnotify) and turns what the kernel reports into a
// stream of events a caller can rely on. It owns the parts of watching that
// every caller needs and that are easy to get wrong:
//
//   - a watch on every directory below the root, down to Options.MaxDepth,
//     added before the caller hears of the directory, so that a caller that
//     reads a directory after its Create event misses no change in it;
//   - symbolic links to directories followed, when asked, and watched again
//     when they are pointed elsewhere;
//   - a Rescan event, after every watch has been added again, whenever
//     events may have been lost (inotify queue overflow, a watch error, a
//     watcher that had to be replaced);
//   - the root directory removed, or missing at start: it is created again
//     (Options.CreateRoot) or waited for, with backoff;
//   - directories that cannot be watched: reported once and retried.
//
// It holds no policy of its own: what a change means, and how often to act
// on it, is the caller's. Callers count what they want through the Metrics
// hooks, under their own metric names. Package dirwatchtest has a Fake
// Watcher for the unit tests of callers. README.md states the contract.
package dirwatch
