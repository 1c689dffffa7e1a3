// Command upstreamhash records and checks hashes of the upstream Go
// declarations that nodeplug copies or relies on (hack/upstream-internals.txt,
// explained in docs/upstream-internals.md), so that a version bump that
// changes one of them fails `make verify` and names it.
//
// Usage (from the repository root, where go.mod pins the modules):
//
//	upstreamhash check LIST    exit 1 naming every entry whose upstream
//	                           declaration changed, moved or is gone
//	upstreamhash update LIST   record the hashes (and versions) of the pinned
//	                           sources; only after a review of each change
//	upstreamhash hash FILE SYMBOL...
//	                           print the hash of declarations of one Go file
//
// Each entry of LIST is one line of six fields:
//
//	KIND MODULE@VERSION FILE SYMBOL HASH NODEPLUG
//
// KIND is "copy" (nodeplug re-implements the declaration) or "relies"
// (nodeplug depends on how it behaves); FILE is relative to the module root;
// SYMBOL is Name or Recv.Name; HASH is "-" until recorded; NODEPLUG names
// the nodeplug code concerned (path:Func). VERSION is the version the hash
// was recorded at: the check always reads the version go.mod selects now.
// Lines starting with '#' and blank lines are kept as they are.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "upstreamhash:", err)
		os.Exit(1)
	}
}

const usage = "usage: upstreamhash check LIST | update LIST | hash FILE SYMBOL..."

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("%s", usage)
	}
	switch args[0] {
	case "check", "update":
		if len(args) != 2 {
			return fmt.Errorf("%s", usage)
		}
		l, err := readList(args[1])
		if err != nil {
			return err
		}
		dirs, err := moduleDirs(l.modules())
		if err != nil {
			return err
		}
		results := l.evaluate(dirs)
		if args[0] == "check" {
			return report(os.Stdout, l, results)
		}
		return update(os.Stdout, args[1], l, results)
	case "hash":
		if len(args) < 3 {
			return fmt.Errorf("%s", usage)
		}
		for _, sym := range args[2:] {
			h, err := hashFile(args[1], sym)
			if err != nil {
				return err
			}
			fmt.Printf("%s %s\n", h, sym)
		}
		return nil
	}
	return fmt.Errorf("unknown command %q; %s", args[0], usage)
}
