package unwiped

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// ConfigMapName is the ConfigMap, in the master's namespace, that holds
// the unwiped disks. It is created empty at install (the manifests and the
// chart ship it); the master never creates it, so that a deleted memory is
// an error rather than an empty one.
const ConfigMapName = "local-volume-provisioner-unwiped-disks"

// MaxBytes bounds the memory's data, below the apiserver's 1 MiB object
// limit: with the names and paths of the shipped manifests an entry takes
// about 300 bytes, so the bound is about 3,000 disks. A disk that would
// cross it is not remembered, and its PV is not dropped: it stays, with an
// error, until entries are wiped, expired or forgotten.
const MaxBytes = 900 * 1024

// ErrMissing means the memory's ConfigMap is gone: whatever it held is
// lost, so the master publishes and drops nothing until an admin restores
// it (docs/local-volume-provisioner.md, "Unwiped disks").
var ErrMissing = errors.New("the memory of unwiped disks is missing")

// ErrFull means a disk would take the memory past MaxBytes.
var ErrFull = errors.New("the memory of unwiped disks is full")

// Disk is one remembered disk.
type Disk struct {
	ID     identity.ID `json:"id"`
	PV     string      `json:"pv"`
	Node   string      `json:"node"`
	Path   string      `json:"path"`
	Since  string      `json:"since"`
	Reason string      `json:"reason"`
}

// Store remembers unwiped disks. Every error is the caller's reason to
// publish and drop nothing: a memory that cannot be read, is missing or
// holds an entry that does not parse never counts as "nothing unwiped".
type Store interface {
	// Load returns the remembered disks by key.
	Load(ctx context.Context) (map[string]Disk, error)
	// Remember records the disk of a released PV dropped without a wipe. A
	// PV without a recorded disk identity, or never claimed, is not
	// recorded.
	Remember(ctx context.Context, pv *v1.PersistentVolume, reason string) error
	// Forget removes an entry once its disk was wiped.
	Forget(ctx context.Context, key string) error
	// Expire forgets the entries older than retention whose node left the
	// cluster: gone reports a node with neither a Node nor a NodeDiskState.
	// It returns the keys it forgot.
	Expire(ctx context.Context, retention time.Duration, gone func(node string) bool) ([]string, error)
}

type store struct {
	kube      kubernetes.Interface
	namespace string
	clock     clock.PassiveClock
}

// New returns the Store of the master in namespace.
func New(kube kubernetes.Interface, namespace string, clk clock.PassiveClock) Store {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &store{kube: kube, namespace: namespace, clock: clk}
}

// EmptyConfigMap is the memory as the install creates it.
func EmptyConfigMap(namespace string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: namespace,
		Labels: map[string]string{jobs.LabelManagedBy: jobs.ManagedByValue}}, Data: map[string]string{}}
}

// Key is an entry's key: a strong identity is the same disk on any node, a
// weak one only on its node.
func Key(node string, id identity.ID) string {
	in := string(id)
	if !id.Strong() {
		in = node + "\x00" + in
	}
	sum := sha256.Sum256([]byte(in))
	return "disk-" + hex.EncodeToString(sum[:10])
}

const sinceLayout = "2006-01-02T15:04:05Z"

func (s *store) get(ctx context.Context) (*v1.ConfigMap, error) {
	cm, err := s.kube.CoreV1().ConfigMaps(s.namespace).Get(ctx, ConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: ConfigMap %s/%s not found; it is created at install, and if it was deleted the disks it "+
			"remembered are unknown: restore it from a backup, or create it empty once every node's disks were wiped or checked",
			ErrMissing, s.namespace, ConfigMapName)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read ConfigMap %s/%s: %w", s.namespace, ConfigMapName, err)
	}
	return cm, nil
}

// parse returns the entries of the memory, or an error naming the first
// that does not parse: an entry edited into garbage may have been a disk.
func parse(cm *v1.ConfigMap) (map[string]Disk, error) {
	out := make(map[string]Disk, len(cm.Data))
	size := 0
	for k, raw := range cm.Data {
		size += len(k) + len(raw)
		var d Disk
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			return nil, fmt.Errorf("entry %s of ConfigMap %s does not parse: %w", k, ConfigMapName, err)
		}
		if err := d.ID.Valid(); err != nil || d.ID == "" || Key(d.Node, d.ID) != k {
			return nil, fmt.Errorf("entry %s of ConfigMap %s has no valid disk identity for its key (%q, node %q)", k, ConfigMapName, d.ID, d.Node)
		}
		out[k] = d
	}
	metrics.UnwipedMemory.Set(float64(len(out)))
	metrics.UnwipedMemoryBytes.Set(float64(size))
	return out, nil
}

func (s *store) Load(ctx context.Context) (map[string]Disk, error) {
	cm, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	return parse(cm)
}

func (s *store) Remember(ctx context.Context, pv *v1.PersistentVolume, reason string) error {
	id := identity.ID(pv.Annotations[jobs.AnnDiskID])
	if id == "" || pv.Spec.ClaimRef == nil {
		return nil
	}
	node := pv.Annotations[jobs.AnnNode]
	raw, err := json.Marshal(Disk{ID: id, PV: pv.Name, Node: node, Path: pv.Annotations[jobs.AnnHostPath],
		Since: s.clock.Now().UTC().Format(sinceLayout), Reason: reason})
	if err != nil {
		return err
	}
	key := Key(node, id)
	added := false
	err = s.update(ctx, func(data map[string]string) error {
		if _, ok := data[key]; ok {
			return nil // remembered already, since then
		}
		if dataSize(data)+len(key)+len(raw) > MaxBytes {
			return fmt.Errorf("%w: %d bytes of at most %d", ErrFull, dataSize(data), MaxBytes)
		}
		data[key], added = string(raw), true
		return nil
	})
	if err != nil {
		return fmt.Errorf("failed to remember the unwiped disk of PV %s: %w", pv.Name, err)
	}
	if added {
		metrics.UnwipedDisks.Inc()
	}
	return nil
}

func dataSize(data map[string]string) int {
	n := 0
	for k, v := range data {
		n += len(k) + len(v)
	}
	return n
}

func (s *store) Forget(ctx context.Context, key string) error {
	return s.update(ctx, func(data map[string]string) error {
		delete(data, key)
		return nil
	})
}

func (s *store) Expire(ctx context.Context, retention time.Duration, gone func(node string) bool) ([]string, error) {
	if retention <= 0 {
		return nil, nil
	}
	var expired []string
	err := s.update(ctx, func(data map[string]string) error {
		expired = expired[:0]
		for k, raw := range data {
			var d Disk
			if json.Unmarshal([]byte(raw), &d) != nil {
				continue // Load reports it
			}
			since, err := time.Parse(sinceLayout, d.Since)
			if err != nil || s.clock.Since(since) < retention || !gone(d.Node) {
				continue
			}
			if d.ID.Strong() {
				continue // matched on any node: a deleted node's disk may come back in another
			}
			delete(data, k)
			expired = append(expired, k)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to expire unwiped disks: %w", err)
	}
	metrics.UnwipedExpired.Add(float64(len(expired)))
	return expired, nil
}

// update changes the memory's data. A memory that is missing or does not
// parse is not written: the change would hide the damage.
func (s *store) update(ctx context.Context, change func(map[string]string) error) error {
	cms := s.kube.CoreV1().ConfigMaps(s.namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := s.get(ctx)
		if err != nil {
			return err
		}
		if _, err := parse(cm); err != nil {
			return err
		}
		cm = cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		before := len(cm.Data)
		if err := change(cm.Data); err != nil {
			return err
		}
		if _, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if len(cm.Data) != before {
			_, _ = parse(cm) // the gauges
		}
		return nil
	})
}
