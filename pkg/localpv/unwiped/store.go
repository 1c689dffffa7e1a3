package unwiped

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// CRDManifest is the UnwipedDisk CustomResourceDefinition in the nodeplug
// repository. It is applied before the provisioner, and not removed with
// it: `kubectl delete -k deploy/local-volume-provisioner` keeps it.
const CRDManifest = "deploy/local-volume-provisioner/memory/crd.yaml"

// MaxEntries bounds the memory unless Options.MaxEntries sets another
// bound. A master reads it from its cache, by key and legacy form, so a
// sync costs the same however many entries there are; the cache holds
// about 2 KiB an entry (BenchmarkMemoryPerEntry), so a full memory takes
// about 200 MiB of the master's memory, and a cluster with more disks
// dropped unwiped than that needs an admin more than a longer memory. A
// disk that would cross it is not remembered, and its PV is not dropped: it
// stays, with an error, until entries are wiped, expired or forgotten. Two
// masters remembering at once may each add one disk past it.
const MaxEntries = 100000

// ErrMissing means the memory cannot be read as such: the apiserver does
// not serve UnwipedDisks (their CRD is not installed). Whatever it held is
// unknown, so the master publishes and drops nothing until an admin
// restores it (docs/local-volume-provisioner.md, "Unwiped disks").
var ErrMissing = errors.New("the memory of unwiped disks is missing")

// ErrFull means a disk would take the memory past its bound (MaxEntries).
var ErrFull = errors.New("the memory of unwiped disks is full")

// Disk is one remembered disk.
type Disk struct {
	ID     identity.ID `json:"id"`
	PV     string      `json:"pv"`
	Node   string      `json:"node"`
	Path   string      `json:"path"`
	Since  string      `json:"since"`
	Reason string      `json:"reason"`
	// Installation is the namespace of the master that remembered it.
	Installation string `json:"-"`
}

// Store remembers unwiped disks. Every error is the caller's reason to
// publish and drop nothing: a memory that cannot be read, is missing or
// holds an entry that does not parse never counts as "nothing unwiped".
type Store interface {
	// Load returns the remembered disks by key, of every installation. It
	// reads the whole memory: for a sync that looks up a few disks, use
	// Candidates.
	Load(ctx context.Context) (map[string]Disk, error)
	// Check returns nil when the memory can be read: an error when it is
	// missing, not read yet, or holds an entry that does not parse.
	Check(ctx context.Context) error
	// Candidates returns, by key, the remembered disks that a disk of id
	// found on node at path may be: the entry of its key, and those of the
	// legacy forms of id (identity.Refines) recorded on any node (strong)
	// or on node at path (weak). The caller decides which one it is. It
	// fails as Load does.
	Candidates(ctx context.Context, node, path string, id identity.ID) (map[string]Disk, error)
	// Remember records the disk of a released PV dropped without a wipe. A
	// PV without a recorded disk identity, or never claimed, is not
	// recorded.
	Remember(ctx context.Context, pv *v1.PersistentVolume, reason string) error
	// Forget removes an entry once its disk was wiped or an admin kept it.
	Forget(ctx context.Context, key string) error
	// Expire forgets the entries older than retention whose node left the
	// cluster: gone reports a node with neither a Node nor a NodeDiskState.
	// It returns the keys it forgot.
	Expire(ctx context.Context, retention time.Duration, gone func(node string) bool) ([]string, error)
}

// Options configure a Store.
type Options struct {
	// Disks is the client of UnwipedDisk objects.
	Disks dynamic.ResourceInterface
	// Kube reads and deletes the legacy ConfigMap in Namespace.
	Kube kubernetes.Interface
	// Namespace and Provisioner name the master's installation.
	Namespace, Provisioner string
	// Clock is the time source; nil means the real clock.
	Clock clock.PassiveClock
	// Recorder, when set, gets an Event on an entry someone deleted.
	Recorder record.EventRecorder
	// MaxEntries bounds the memory; zero means MaxEntries.
	MaxEntries int
}

type store struct {
	Options
	// cache, when set, is where the memory is read (NewFromInformer);
	// otherwise every read lists the apiserver.
	cache    *cached
	mu       sync.Mutex
	migrated bool
	// deleting are the entries whose deletion was already logged.
	deleting map[string]bool
}

// New returns the Store of a master.
func New(o Options) Store {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = MaxEntries
	}
	metrics.UnwipedMemoryLimit.Set(float64(o.MaxEntries))
	return &store{Options: o, deleting: map[string]bool{}}
}

// Key is an entry's key, the name of its UnwipedDisk: a strong identity is
// the same disk on any node and path; a weak one only on its node, at its
// path (two file systems of one node may report the same weak identity).
func Key(node, path string, id identity.ID) string {
	in := string(id)
	if !id.Strong() {
		in = node + "\x00" + path + "\x00" + in
	}
	sum := sha256.Sum256([]byte(in))
	return "disk-" + hex.EncodeToString(sum[:10])
}

const sinceLayout = "2006-01-02T15:04:05Z"

var errNotServed = fmt.Errorf("%w: the apiserver does not serve %s; apply %s (kubectl apply -f %s) before the provisioner, "+
	"and if it was deleted, the disks it remembered are unknown: restore its objects from a backup, or apply it empty once "+
	"every node's disks were wiped or checked", ErrMissing, v1alpha1.UnwipedDiskResource+"."+v1alpha1.GroupName, CRDManifest, CRDManifest)

func (s *store) Load(ctx context.Context) (map[string]Disk, error) {
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	if s.cache != nil {
		return s.loadCached()
	}
	return s.list(ctx)
}

func (s *store) Check(ctx context.Context) error {
	if err := s.migrate(ctx); err != nil {
		return err
	}
	if s.cache != nil {
		return s.checkCached(ctx)
	}
	_, err := s.list(ctx)
	return err
}

func (s *store) Candidates(ctx context.Context, node, path string, id identity.ID) (map[string]Disk, error) {
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	if s.cache != nil {
		return s.candidatesCached(node, path, id)
	}
	all, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	key, queries := Key(node, path, id), legacyQueries(node, path, id)
	out := map[string]Disk{}
	for k, d := range all {
		if v := legacyIndexValue(d.ID, d.Node, d.Path); k == key || v != "" && slices.Contains(queries, v) {
			out[k] = d
		}
	}
	return out, nil
}

// list reads every entry. One that does not parse, or whose name is not
// the key of its disk, fails it: an entry edited into garbage may have
// been a disk.
func (s *store) list(ctx context.Context) (map[string]Disk, error) {
	l, err := s.Disks.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, errNotServed
	}
	if err != nil {
		return nil, fmt.Errorf("failed to list the memory of unwiped disks (%s): %w", v1alpha1.UnwipedDiskResource, err)
	}
	out := make(map[string]Disk, len(l.Items))
	for i := range l.Items {
		u := &l.Items[i]
		d, err := parse(u)
		if err != nil {
			return nil, err
		}
		if u.GetDeletionTimestamp() != nil {
			s.noteDeletion(ctx, u)
		}
		out[u.GetName()] = d
	}
	metrics.UnwipedMemory.Set(float64(len(out)))
	return out, nil
}

func parse(u *unstructured.Unstructured) (Disk, error) {
	obj, err := v1alpha1.UnwipedDiskFromUnstructured(u)
	if err != nil {
		return Disk{}, fmt.Errorf("UnwipedDisk %s does not parse: %w", u.GetName(), err)
	}
	if errs := v1alpha1.ValidateUnwipedDisk(obj); len(errs) > 0 {
		return Disk{}, fmt.Errorf("UnwipedDisk %s is not valid: %w", u.GetName(), errs.ToAggregate())
	}
	sp := obj.Spec
	id := identity.ID(sp.DiskID)
	if err := id.Valid(); err != nil || Key(sp.Node, sp.Path, id) != obj.Name {
		return Disk{}, fmt.Errorf("UnwipedDisk %s has no valid disk identity for its name (%q, node %q, path %q)",
			obj.Name, id, sp.Node, sp.Path)
	}
	return Disk{ID: id, PV: sp.PV, Node: sp.Node, Path: sp.Path, Since: sp.Since.UTC().Format(sinceLayout),
		Reason: sp.Reason, Installation: sp.Installation.Namespace}, nil
}

// deletionHeld says what a deletion of an entry does, and how to forget a
// disk on purpose.
const deletionHeld = "Someone deleted a remembered unwiped disk; it is still remembered, and held when it returns. " +
	"To forget it on purpose, set the admin-action annotation on its held PV (wipe or keep), or remove its finalizer " +
	"knowing that its tenant's data may then be published"

// noteDeletion logs, and puts an Event on the entry, once per entry and
// master, that someone asked to delete a remembered disk: the finalizer
// keeps it, and it still counts.
func (s *store) noteDeletion(ctx context.Context, u *unstructured.Unstructured) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleting[u.GetName()] {
		return
	}
	s.deleting[u.GetName()] = true
	klog.FromContext(ctx).Info(deletionHeld, "unwipedDisk", u.GetName(), "finalizer", v1alpha1.UnwipedDiskFinalizer)
	if s.Recorder != nil {
		s.Recorder.Eventf(u, v1.EventTypeWarning, "UnwipedDiskDeletionHeld", "%s (finalizer %s)", deletionHeld,
			v1alpha1.UnwipedDiskFinalizer)
	}
}

func (s *store) Remember(ctx context.Context, pv *v1.PersistentVolume, reason string) error {
	id := identity.ID(pv.Annotations[jobs.AnnDiskID])
	if id == "" || pv.Spec.ClaimRef == nil {
		return nil
	}
	d := Disk{ID: id, PV: pv.Name, Node: pv.Annotations[jobs.AnnNode], Path: pv.Annotations[jobs.AnnHostPath], Reason: reason}
	added, err := s.add(ctx, d, s.Clock.Now())
	if err != nil {
		return fmt.Errorf("failed to remember the unwiped disk of PV %s: %w", pv.Name, err)
	}
	if added {
		metrics.UnwipedDisks.Inc()
	}
	return nil
}

// add creates the entry of d unless it exists. The memory is checked
// first: a broken one is not written to, and a full one refuses d.
func (s *store) add(ctx context.Context, d Disk, since time.Time) (bool, error) {
	known, n, err := s.known(ctx, Key(d.Node, d.Path, d.ID))
	if err != nil {
		return false, err
	}
	if known {
		return false, nil // remembered already, since then
	}
	if n >= s.MaxEntries {
		return false, fmt.Errorf("%w: %d entries of at most %d", ErrFull, n, s.MaxEntries)
	}
	added, err := s.create(ctx, d, since, nil)
	if added {
		metrics.UnwipedMemory.Set(float64(n + 1))
	}
	return added, err
}

// known reports whether the memory holds key, and how many entries it
// holds; it fails on a memory that cannot be read.
func (s *store) known(ctx context.Context, key string) (bool, int, error) {
	if s.cache == nil {
		all, err := s.Load(ctx)
		_, ok := all[key]
		return ok, len(all), err
	}
	if err := s.migrate(ctx); err != nil {
		return false, 0, err
	}
	if err := s.cache.ready(); err != nil {
		return false, 0, err
	}
	_, ok, err := s.cache.mc.GetByKey(key)
	return ok, s.cache.size(), err
}

// create creates the entry of d, guarded by the finalizer. It reports
// false when the entry exists.
func (s *store) create(ctx context.Context, d Disk, since time.Time, labels map[string]string) (bool, error) {
	key := Key(d.Node, d.Path, d.ID)
	labels = maps.Clone(labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[jobs.LabelManagedBy] = jobs.ManagedByValue
	obj := &v1alpha1.UnwipedDisk{
		ObjectMeta: metav1.ObjectMeta{Name: key, Finalizers: []string{v1alpha1.UnwipedDiskFinalizer}, Labels: labels},
		Spec: v1alpha1.UnwipedDiskSpec{DiskID: string(d.ID), PV: d.PV, Node: d.Node, Path: d.Path,
			Since: metav1.NewTime(since.UTC().Truncate(time.Second)), Reason: truncate(d.Reason, v1alpha1.MaxReasonLength),
			Installation: v1alpha1.Installation{Namespace: s.Namespace, Provisioner: s.Provisioner}},
	}
	u, err := v1alpha1.UnwipedDiskToUnstructured(obj)
	if err != nil {
		return false, err
	}
	created, err := s.Disks.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, nil // another master remembered it meanwhile
		}
		return false, fmt.Errorf("failed to create UnwipedDisk %s: %w", key, err)
	}
	if s.cache != nil {
		s.cache.mc.Mutation(created) // found at once, before the watch shows it
	}
	return true, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
