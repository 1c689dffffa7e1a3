// Package version holds nodeplug's own version, stamped at link time by
// hack/lib/build.sh, and formats it next to the embedded upstream version.
package version
