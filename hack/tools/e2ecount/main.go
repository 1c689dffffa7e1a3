// Command e2ecount reads the output of go test -json on its standard input,
// passes the tests' output through to its standard output as it arrives
// (as go test -v shows it), and ends with the counts hack/e2e.sh prints on
// an existing cluster: the tests that passed, failed, and were skipped
// because they need the local cluster's host (by name), and those skipped
// for another reason (by name, with the reason). It exits 1 when a test or
// a package failed, or when no test ran, so that a run is never silently
// green.
//
//	go test -json -tags e2e ./test/e2e/... 2>&1 | e2ecount
package main

import (
	"fmt"
	"os"
)

func main() {
	sum, err := count(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2ecount: %v\n", err)
		os.Exit(2)
	}
	fmt.Print(sum.report())
	if !sum.ok() {
		os.Exit(1)
	}
}
