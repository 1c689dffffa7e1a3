// Package pvopstest has a Fake pvops.Interface for tests of the master's
// roles: it records each call and changes nothing.
package pvopstest
