package unwiped

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
)

// LegacyConfigMapName is the ConfigMap, in a master's namespace, that held
// the memory before UnwipedDisks. A master that finds it moves every entry
// into UnwipedDisks and then deletes it.
const LegacyConfigMapName = "local-volume-provisioner-unwiped-disks"

// LegacyKey is an entry's key in the legacy ConfigMap, which held PVs of
// that time carry: a weak identity was keyed by its node alone.
func LegacyKey(node string, id identity.ID) string {
	in := string(id)
	if !id.Strong() {
		in = node + "\x00" + in
	}
	sum := sha256.Sum256([]byte(in))
	return "disk-" + hex.EncodeToString(sum[:10])
}

// migrate moves the legacy ConfigMap's entries into UnwipedDisks, once
// per master: all of them, each under its new key and labelled with its
// old one, and only then deletes the ConfigMap. An entry that does not
// parse moves nothing and is an error, as it was: it may have been a disk.
func (s *store) migrate(ctx context.Context) error {
	s.mu.Lock()
	done := s.migrated
	s.mu.Unlock()
	if done || s.Kube == nil {
		return nil
	}
	cms := s.Kube.CoreV1().ConfigMaps(s.Namespace)
	cm, err := cms.Get(ctx, LegacyConfigMapName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s.setMigrated()
		return nil
	case err != nil:
		return fmt.Errorf("failed to read the legacy memory of unwiped disks, ConfigMap %s/%s: %w", s.Namespace, LegacyConfigMapName, err)
	}
	disks, err := parseLegacy(cm.Data)
	if err != nil {
		return fmt.Errorf("the legacy memory of unwiped disks, ConfigMap %s/%s, is not moved to UnwipedDisks: %w",
			s.Namespace, LegacyConfigMapName, err)
	}
	// Every entry moves, also past MaxEntries: none may be lost.
	for _, old := range slices.Sorted(maps.Keys(disks)) {
		d := disks[old]
		since, err := time.Parse(sinceLayout, d.Since)
		if err != nil {
			since = s.Clock.Now() // kept longer, never shorter
		}
		if _, err := s.create(ctx, d, since, map[string]string{LabelLegacyKey: old}); err != nil {
			return fmt.Errorf("failed to move entry %s of ConfigMap %s/%s: %w", old, s.Namespace, LegacyConfigMapName, err)
		}
	}
	pre := metav1.Preconditions{UID: &cm.UID, ResourceVersion: &cm.ResourceVersion}
	if err := cms.Delete(ctx, LegacyConfigMapName, metav1.DeleteOptions{Preconditions: &pre}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete ConfigMap %s/%s once its entries were moved: %w", s.Namespace, LegacyConfigMapName, err)
	}
	klog.FromContext(ctx).Info("Moved the legacy memory of unwiped disks into UnwipedDisks", "configMap",
		klog.KRef(s.Namespace, LegacyConfigMapName), "entries", len(disks))
	s.setMigrated()
	return nil
}

func (s *store) setMigrated() {
	s.mu.Lock()
	s.migrated = true
	s.mu.Unlock()
}

// parseLegacy returns the legacy entries by their old key, or an error
// naming the first that does not parse.
func parseLegacy(data map[string]string) (map[string]Disk, error) {
	out := make(map[string]Disk, len(data))
	for k, raw := range data {
		var d Disk
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			return nil, fmt.Errorf("entry %s does not parse: %w", k, err)
		}
		if err := d.ID.Valid(); err != nil || d.ID == "" || LegacyKey(d.Node, d.ID) != k {
			return nil, fmt.Errorf("entry %s has no valid disk identity for its key (%q, node %q)", k, d.ID, d.Node)
		}
		if d.PV == "" {
			d.PV = "unknown"
		}
		out[k] = d
	}
	return out, nil
}
