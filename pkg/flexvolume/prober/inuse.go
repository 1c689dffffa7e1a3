package prober

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// NewKubeletInUseChecker returns an InUseChecker for the kubelet: a driver
// is in use while a pod volume directory
// <rootDir>/pods/*/volumes/<vendor~driver>/* or a device mount
// <rootDir>/plugins/kubernetes.io/flexvolume/<vendor>/<driver>/mounts/*
// exists. rootDir is the kubelet's --root-dir. The kubelet removes both
// once the volume is torn down.
func NewKubeletInUseChecker(rootDir string) InUseChecker {
	return InUseFunc(func(_ context.Context, pluginName string) (bool, error) {
		escaped := strings.ReplaceAll(pluginName, "/", "~")
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

// NewNodeStatusInUseChecker returns an InUseChecker for the
// kube-controller-manager: a driver is in use while any Node reports a
// volume of it as attached or in use. Attachable flexvolume volumes are
// named "<vendor>/<driver>/<volume>" there.
func NewNodeStatusInUseChecker(nodes corelisters.NodeLister) InUseChecker {
	return InUseFunc(func(_ context.Context, pluginName string) (bool, error) {
		list, err := nodes.List(labels.Everything())
		if err != nil {
			return false, err
		}
		prefix := pluginName + "/"
		for _, n := range list {
			for _, v := range n.Status.VolumesAttached {
				if strings.HasPrefix(string(v.Name), prefix) {
					return true, nil
				}
			}
			for _, v := range n.Status.VolumesInUse {
				if strings.HasPrefix(string(v), prefix) {
					return true, nil
				}
			}
		}
		return false, nil
	})
}
