package prober

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	utilstrings "k8s.io/utils/strings"
)

// NewKubeletInUseChecker returns an InUseChecker for the kubelet: a driver
// is in use while a pod volume directory
// <rootDir>/pods/*/volumes/<vendor~driver>/* or a device mount
// <rootDir>/plugins/kubernetes.io/flexvolume/<vendor>/<driver>/mounts/*
// exists. rootDir is the kubelet's --root-dir. The kubelet removes both
// once the volume is torn down.
func NewKubeletInUseChecker(rootDir string) InUseChecker {
	return InUseFunc(func(_ context.Context, pluginName string) (bool, error) {
		// The kubelet's pod volume directory name for the plugin
		// (GetPodVolumeDir), as pkg/flexvolume/flexadapter builds it.
		escaped := utilstrings.EscapeQualifiedName(pluginName)
		pods, err := os.ReadDir(filepath.Join(rootDir, "pods"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		for _, pod := range pods {
			used, err := nonEmptyDir(filepath.Join(rootDir, "pods", pod.Name(), "volumes", escaped))
			if used || err != nil {
				return used, err
			}
		}
		return nonEmptyDir(filepath.Join(rootDir, "plugins", "kubernetes.io", "flexvolume", pluginName, "mounts"))
	})
}

func nonEmptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if len(names) > 0 {
		return true, nil
	}
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	return false, err
}

// ErrNodesNotSynced is returned by the checker of
// NewNodeStatusInUseChecker while the node informer has not synced. The
// prober counts an error as "in use": no driver is unloaded on a guess.
var ErrNodesNotSynced = errors.New("node informer has not synced yet")

// NewNodeStatusInUseChecker returns an InUseChecker for the
// kube-controller-manager: a driver is in use while any Node reports a
// volume of it as attached or in use. Until synced returns true (normally
// the node informer's HasSynced; nil never does) every check fails with
// ErrNodesNotSynced, as an empty cache would otherwise read as "unused".
//
// Node status names volumes by their unique name, "<plugin name>/<volume
// name>" (upstream's GetUniqueVolumeName): "<vendor>/<driver>/<volume>", or
// "<driver>/<volume>" for a driver without a vendor. The volume name (a PV
// or pod volume name, or "<pod uid>-<volume>") never contains a '/', which
// keeps driver "foo" apart from driver "foo/bar".
func NewNodeStatusInUseChecker(nodes corelisters.NodeLister, synced cache.InformerSynced) InUseChecker {
	return InUseFunc(func(_ context.Context, pluginName string) (bool, error) {
		if synced == nil || !synced() {
			return false, ErrNodesNotSynced
		}
		list, err := nodes.List(labels.Everything())
		if err != nil {
			return false, fmt.Errorf("listing nodes: %w", err)
		}
		for _, n := range list {
			for _, v := range n.Status.VolumesAttached {
				if isVolumeOf(v.Name, pluginName) {
					return true, nil
				}
			}
			for _, v := range n.Status.VolumesInUse {
				if isVolumeOf(v, pluginName) {
					return true, nil
				}
			}
		}
		return false, nil
	})
}

// isVolumeOf tells whether a unique volume name belongs to plugin pluginName.
func isVolumeOf(unique v1.UniqueVolumeName, pluginName string) bool {
	vol, ok := strings.CutPrefix(string(unique), pluginName+"/")
	return ok && vol != "" && !strings.Contains(vol, "/")
}
