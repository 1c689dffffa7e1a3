package volumecheck

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

// Reason says why a mount was refused; it is the reason label of the
// refusals metric.
type Reason string

const (
	// ReasonMismatch: the path leads to another disk than the PV's.
	ReasonMismatch Reason = "mismatch"
	// ReasonUnreadable: the PV's identity was strong when it was published
	// and what the path leads to now cannot be identified or compared.
	ReasonUnreadable Reason = "unreadable"
	// ReasonNotMounted: a block device's file system is not what the
	// kubelet's device mount path holds.
	ReasonNotMounted Reason = "device_not_mounted"
)

// Reader reads the identity of what path leads to now, in the form of the
// identity recorded where what path leads to has that form (see
// identity.DirectoryAs): the kubelet may read what discovery could not,
// and must compute what discovery recorded.
type Reader func(path string, recorded identity.ID) (identity.ID, error)

// maxOwners bounds the in-memory index of disk identities; a node has far
// fewer local PVs.
const maxOwners = 4096

// Checker compares local PVs' recorded disk identities with what their
// paths lead to. It is safe for concurrent use; it changes nothing on the
// node, and blocks only on reading the identity (a stat, an open and an
// ioctl of the path, or sysfs).
type Checker interface {
	// Check proves that pv's spec.local.path leads to the disk pv
	// recorded. It returns nil when it does, when pv is not a local PV or
	// recorded no identity, and when a weak recorded identity cannot be
	// compared; else a *Refusal (counted and logged).
	Check(pv *v1.PersistentVolume) error
	// CheckMounted proves, for a local PV whose path leads to a block
	// device, that the file system at mountPath (the kubelet's device
	// mount path) is the one on that device. It returns nil for PVs
	// without a recorded identity and for directory PVs.
	CheckMounted(pv *v1.PersistentVolume, mountPath string) error
	// Observe remembers which disk a local PV was published for, so that
	// a later refusal can name the PV whose disk a path leads to.
	Observe(pv *v1.PersistentVolume)
	// Recorded returns the disk identity a PV recorded, or the unknown
	// identity when it recorded none or an invalid one.
	Recorded(pv *v1.PersistentVolume) identity.ID
}

type checker struct {
	logger klog.Logger
	read   Reader

	mu sync.Mutex
	// owners maps a recorded disk identity to the name of the PV that
	// recorded it, for the PVs this Checker has seen.
	owners map[identity.ID]string
}

// New returns a Checker that reads identities with read (PathReader("")
// when nil) and logs with logger.
func New(logger klog.Logger, read Reader) Checker {
	if read == nil {
		read = PathReader("")
	}
	return &checker{logger: logger, read: read, owners: map[identity.ID]string{}}
}

var _ Checker = &checker{}

// Recorded implements Checker.
func (c *checker) Recorded(pv *v1.PersistentVolume) identity.ID {
	if pv == nil {
		return ""
	}
	id := identity.ID(pv.Annotations[jobs.AnnDiskID])
	if err := id.Valid(); err != nil {
		c.logger.Info("Ignoring an invalid disk identity of a local PV", "pv", pv.Name, "err", err)
		return ""
	}
	return id
}

// Observe implements Checker.
func (c *checker) Observe(pv *v1.PersistentVolume) {
	if pv != nil && pv.Spec.Local != nil {
		c.observe(pv.Name, c.Recorded(pv))
	}
}

// observe records that PV name recorded disk id.
func (c *checker) observe(name string, id identity.ID) {
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.owners[id]; !ok && len(c.owners) >= maxOwners {
		for k := range c.owners {
			delete(c.owners, k)
			break
		}
	}
	c.owners[id] = name
}

// owner returns the name of the PV other than self that recorded id.
func (c *checker) owner(id identity.ID, self string) string {
	if id == "" {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if name := c.owners[id]; name != self {
		return name
	}
	return ""
}

// Check implements Checker.
func (c *checker) Check(pv *v1.PersistentVolume) error {
	if pv == nil || pv.Spec.Local == nil {
		return nil
	}
	recorded := c.Recorded(pv)
	if recorded == "" {
		return nil
	}
	c.observe(pv.Name, recorded)
	path := pv.Spec.Local.Path
	found, err := c.read(path, recorded)
	r := &Refusal{PV: pv.Name, Path: path, Recorded: recorded, Found: found, ReadErr: err}
	if err == nil {
		r.Owner = c.owner(found, pv.Name)
	}
	switch m := identity.Compare(recorded, found); {
	case err == nil && m == identity.Same && (found == recorded || r.Owner == ""):
		c.logger.V(4).Info("Local PV's disk proven", "pv", pv.Name, "path", path, "diskID", found)
		return nil
	case err == nil && r.Owner == "" && identity.Refines(recorded, found):
		// A record in a legacy form proves no more than it did; what the
		// path leads to agrees with all it says.
		c.logger.V(2).Info("Local PV records a legacy form of its disk's identity, which the disk agrees with",
			"pv", pv.Name, "path", path, "recorded", recorded, "found", found)
		return nil
	case err == nil && found != "" && (m == identity.Different || r.Owner != "" || !recorded.Strong()):
		// Any other disk, or one of another kind than a weak record (a
		// UUID-less file system's device against a file system UUID).
		r.Reason = ReasonMismatch
	case recorded.Strong():
		r.Reason = ReasonUnreadable
	default:
		c.logger.V(2).Info("Local PV's weak disk identity cannot be read now, mounting as upstream does",
			"pv", pv.Name, "path", path, "recorded", recorded, "found", found, "err", err)
		return nil
	}
	return c.refuse(r)
}

// refuse counts and logs a refusal and returns it.
func (c *checker) refuse(r *Refusal) error {
	refusals.WithLabelValues(string(r.Reason)).Inc()
	c.logger.Info("Refusing to mount a local PV: its path does not lead to its disk", "pv", r.PV, "path", r.Path,
		"reason", r.Reason, "recorded", r.Recorded, "found", r.Found, "owner", r.Owner, "err", r.ReadErr)
	return r
}

// Refusal is the error of a mount refused because a local PV's path does
// not lead to its disk. Nothing was mounted or written.
type Refusal struct {
	Reason Reason
	// PV is the refused PV, Path its spec.local.path.
	PV, Path string
	// Recorded is the PV's disk, Found what Path leads to now (unknown
	// when it could not be read).
	Recorded, Found identity.ID
	// Owner names the PV whose disk Found is, when the Checker knows.
	Owner string
	// ReadErr is why Found could not be read.
	ReadErr error
	// MountPath is, for ReasonNotMounted, the device mount path.
	MountPath string
}

// Error names the disk found, the PV whose disk it is when known, and the
// fix.
func (r *Refusal) Error() string {
	const done = "nothing was mounted or written. "
	const then = "; pods using the PV then start on their own, with no change to the PV"
	fix := fmt.Sprintf("Restore the mount: put PV %s's own disk back at %s", r.PV, r.Path)
	switch r.Reason {
	case ReasonMismatch:
		other := "a disk that no local PV mounted on this node was published for"
		if r.Owner != "" {
			other = fmt.Sprintf("the disk of PV %s", r.Owner)
			fix += fmt.Sprintf(" (and PV %s's disk at its own path)", r.Owner)
		}
		return fmt.Sprintf("local PV %s refused: %s leads to disk %s, %s, not to the PV's disk %s; %s%s%s",
			r.PV, r.Path, r.Found, other, r.Recorded, done, fix, then)
	case ReasonNotMounted:
		return fmt.Sprintf("local PV %s refused: %s holds a file system that is not on %s, the PV's disk %s (%v); %s"+
			"Unmount %s so that the kubelet mounts the PV's disk there%s",
			r.PV, r.MountPath, r.Path, r.Recorded, r.ReadErr, done, r.MountPath, then)
	}
	what := fmt.Sprintf("found %s, which cannot be compared with it", r.Found)
	if r.ReadErr != nil {
		what = fmt.Sprintf("cannot identify what it leads to: %v", r.ReadErr)
	} else if r.Found == "" {
		what = "what it leads to reports no identity"
	}
	return fmt.Sprintf("local PV %s refused: cannot prove that %s leads to the PV's disk %s: %s; %s%s%s",
		r.PV, r.Path, r.Recorded, what, done, fix, then)
}

// Unwrap returns why the current identity could not be read.
func (r *Refusal) Unwrap() error { return r.ReadErr }

// CheckMounted implements Checker.
func (c *checker) CheckMounted(pv *v1.PersistentVolume, mountPath string) error {
	if pv == nil || pv.Spec.Local == nil || c.Recorded(pv) == "" {
		return nil
	}
	dev, isDev, err := ResolveDevice(pv.Spec.Local.Path)
	if err != nil || !isDev {
		// Check has refused what cannot be resolved when it mattered.
		return nil
	}
	if err := mountedFrom(mountPath, dev); err != nil {
		return c.refuse(&Refusal{Reason: ReasonNotMounted, PV: pv.Name, Path: pv.Spec.Local.Path,
			Recorded: c.Recorded(pv), MountPath: mountPath, ReadErr: err})
	}
	return nil
}
