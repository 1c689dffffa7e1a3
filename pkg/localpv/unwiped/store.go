package unwiped

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

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
// the unwiped disks.
const ConfigMapName = "local-volume-provisioner-unwiped-disks"

// Disk is one remembered disk.
type Disk struct {
	ID     identity.ID `json:"id"`
	PV     string      `json:"pv"`
	Node   string      `json:"node"`
	Path   string      `json:"path"`
	Since  string      `json:"since"`
	Reason string      `json:"reason"`
}

// Store remembers unwiped disks.
type Store interface {
	// Load returns the remembered disks by key.
	Load(ctx context.Context) (map[string]Disk, error)
	// Remember records the disk of a released PV dropped without a wipe. A
	// PV without a recorded disk identity, or never claimed, is not
	// recorded.
	Remember(ctx context.Context, pv *v1.PersistentVolume, reason string) error
	// Forget removes an entry once its disk was wiped.
	Forget(ctx context.Context, key string) error
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

func (s *store) Load(ctx context.Context) (map[string]Disk, error) {
	cm, err := s.kube.CoreV1().ConfigMaps(s.namespace).Get(ctx, ConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[string]Disk{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read ConfigMap %s: %w", ConfigMapName, err)
	}
	out := make(map[string]Disk, len(cm.Data))
	for k, raw := range cm.Data {
		var d Disk
		if json.Unmarshal([]byte(raw), &d) == nil && d.ID.Valid() == nil && d.ID != "" {
			out[k] = d
		}
	}
	return out, nil
}

func (s *store) Remember(ctx context.Context, pv *v1.PersistentVolume, reason string) error {
	id := identity.ID(pv.Annotations[jobs.AnnDiskID])
	if id == "" || pv.Spec.ClaimRef == nil {
		return nil
	}
	node := pv.Annotations[jobs.AnnNode]
	raw, err := json.Marshal(Disk{ID: id, PV: pv.Name, Node: node, Path: pv.Annotations[jobs.AnnHostPath],
		Since: s.clock.Now().UTC().Format("2006-01-02T15:04:05Z"), Reason: reason})
	if err != nil {
		return err
	}
	key := Key(node, id)
	if err := s.update(ctx, func(data map[string]string) { data[key] = string(raw) }); err != nil {
		return fmt.Errorf("failed to remember the unwiped disk of PV %s: %w", pv.Name, err)
	}
	metrics.UnwipedDisks.Inc()
	return nil
}

func (s *store) Forget(ctx context.Context, key string) error {
	return s.update(ctx, func(data map[string]string) { delete(data, key) })
}

func (s *store) update(ctx context.Context, change func(map[string]string)) error {
	cms := s.kube.CoreV1().ConfigMaps(s.namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, ConfigMapName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: s.namespace,
				Labels: map[string]string{jobs.LabelManagedBy: jobs.ManagedByValue}}, Data: map[string]string{}}
			change(cm.Data)
			if len(cm.Data) == 0 {
				return nil
			}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		cm = cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		change(cm.Data)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}
