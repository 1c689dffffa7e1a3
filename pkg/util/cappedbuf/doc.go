// Package cappedbuf holds Buffer, the writer that nodeplug gives a command
// it runs (a flexvolume driver, a mount utility in a pod) for its stdout or
// stderr: it keeps the first bytes written, up to a cap, and says whether
// more came. What happens to the bytes past the cap is the caller's choice
// (WhenFull): refuse them, which stops a local command through SIGPIPE, or
// drop them, which keeps a remote stream flowing to its end.
package cappedbuf
