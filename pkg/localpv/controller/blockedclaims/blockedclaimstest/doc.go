// Package blockedclaimstest helps tests of the policy writer and of the
// master that drives it: the policy as shipped, and a reader of the
// blockedClaims expression that evaluates it with CEL, as the apiserver
// does.
package blockedclaimstest
