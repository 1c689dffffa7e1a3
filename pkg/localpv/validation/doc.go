// Package validation checks what a discovery Job reported against the
// configuration and against the node the master pinned the Job to. A node is
// not trusted: everything it claims is checked here before any PV is made.
package validation
