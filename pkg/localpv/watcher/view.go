package watcher

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
)

// View is the watcher's summary of the node's discovery directories.
type View struct {
	// Digest is the hex SHA-256 of the sorted entries.
	Digest string
	// Entries counts matching entries, publishable or not.
	Entries int
}

// ComputeView scans every class without measuring sizes. A class whose
// directory cannot be read contributes its error, so that it reappearing
// changes the digest.
func ComputeView(s *discovery.Scanner, classes []discovery.ClassSpec, mountInfoPath string) (View, error) {
	mps, err := discovery.MountPoints(mountInfoPath)
	if err != nil {
		return View{}, err
	}
	h := sha256.New()
	n := 0
	for _, spec := range classes {
		entries, err := s.ScanClass(spec, mps, false)
		if err != nil {
			fmt.Fprintf(h, "%q error\n", spec.Name)
			continue
		}
		for _, e := range entries {
			fmt.Fprintf(h, "%q %q %s %s\n", spec.Name, e.Name, e.Kind, e.Skip)
			n++
		}
	}
	return View{Digest: hex.EncodeToString(h.Sum(nil)), Entries: n}, nil
}
