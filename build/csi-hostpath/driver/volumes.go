package driver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/wipe"
)

// idPattern is what a volume ID may look like: one plain path component
// that is neither hidden nor "." or "..", so that a volume's directory
// cannot lie outside the data directory or collide with the metadata
// files (which start with '.').
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// maxPlainID is the longest volume name used as its ID unchanged; longer
// names, and names with other characters, get a hashed ID.
const maxPlainID = 64

// validateID checks a volume ID received from a caller.
func validateID(id string) error {
	switch {
	case id == "":
		return errors.New("volume ID is empty")
	case !idPattern.MatchString(id):
		return fmt.Errorf("volume ID %q is not one plain file name of letters, digits, '_', '.' and '-' (not starting with '.' or '-', at most 128 bytes)", id)
	}
	return nil
}

// idForName returns the volume ID for a CreateVolume name: the name itself
// when it is a short, safe file name (external-provisioner's "pvc-<uid>"),
// else "h-" and a hash of it.
func idForName(name string) string {
	if len(name) <= maxPlainID && idPattern.MatchString(name) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "h-" + hex.EncodeToString(sum[:20])
}

// volume is what the driver records of a volume, beside its directory.
type volume struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	CapacityBytes int64  `json:"capacityBytes"`
}

// store keeps volumes in dir: <dir>/<id> is the volume's directory and
// <dir>/.<id>.json its record. The file system is the only state, so the
// driver can restart at any time. mountInfo lists the mounts a volume's
// deletion refuses to cross (default discovery.SelfMountInfo).
type store struct{ dir, mountInfo string }

func (s store) path(id string) string     { return filepath.Join(s.dir, id) }
func (s store) metaPath(id string) string { return filepath.Join(s.dir, "."+id+".json") }

// get returns the volume with ID id; ok is false when there is none.
func (s store) get(id string) (v volume, ok bool, err error) {
	b, err := os.ReadFile(s.metaPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return volume{}, false, nil
	}
	if err != nil {
		return volume{}, false, fmt.Errorf("reading volume record: %w", err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return volume{}, false, fmt.Errorf("parsing volume record %s: %w", s.metaPath(id), err)
	}
	return v, true, nil
}

// create writes v's record, then its directory. It is idempotent: a crash
// between the two leaves a record without a directory, which create
// completes when the provisioner retries.
func (s store) create(v volume) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := s.metaPath(v.ID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("writing volume record: %w", err)
	}
	if err := os.Rename(tmp, s.metaPath(v.ID)); err != nil {
		return fmt.Errorf("writing volume record: %w", err)
	}
	// 0777: the pods that use the volume may run as any user, as with an
	// emptyDir.
	if err := os.Mkdir(s.path(v.ID), 0o777); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating volume directory: %w", err)
	}
	if err := os.Chmod(s.path(v.ID), 0o777); err != nil {
		return fmt.Errorf("creating volume directory: %w", err)
	}
	return nil
}

// hasDir reports whether the volume's directory exists.
func (s store) hasDir(id string) bool {
	fi, err := os.Stat(s.path(id))
	return err == nil && fi.IsDir()
}

// delete empties the volume's directory with the provisioner's one
// directory cleaner (wipe.CleanDirectory), removes it, then its record. The
// cleaner never follows a symlink nor crosses onto another file system: a
// mount below the volume (a tenant's leaked bind mount) refuses the
// deletion, and the host's files behind it are kept. A volume that does not
// exist is no error.
func (s store) delete(ctx context.Context, id string) error {
	p := s.path(id)
	mountInfo := s.mountInfo
	if mountInfo == "" {
		mountInfo = discovery.SelfMountInfo
	}
	switch err := wipe.CleanDirectory(ctx, p, mountInfo); {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("emptying volume directory: %w", err)
	default:
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing volume directory: %w", err)
		}
	}
	if err := os.Remove(s.metaPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing volume record: %w", err)
	}
	return nil
}
