package flexadapter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/mount-utils"
)

// A driver's mountdevice or mount may mount something and then fail, time
// out or be killed (or the kubelet may be). Its next try then finds a mount
// at the target, and prepareMountPoint would take it for a finished one:
// the consumer would run on a half-prepared volume. So before each such
// call a pending marker is written, and after a failed call, or at the next
// call when a marker is left from a kubelet that died, whatever is mounted
// at the target is unmounted, so that the driver runs again from scratch.

// pendingDirName is the directory, under the flexvolume plugin dir of the
// kubelet, of the pending markers.
const pendingDirName = ".nodeplug-pending"

// maxStackedMounts bounds how many mounts stacked at one target are undone.
const maxStackedMounts = 8

// podOperator is what the kubelet's mounter offers when mount pods are on
// (pkg/mountpod/mounter): one decision of pod or host for a driver's call
// and the check, after it, that a mount it made in a mount pod reached the
// host (undone when it did not); and that check alone.
type podOperator interface {
	PodOperation(ctx context.Context, target string) (context.Context, func() error, error)
	VerifyPodMount(target string) error
}

// mountCall is one driver mountdevice or mount: the context to call the
// driver with and the check to run after it succeeded.
type mountCall struct {
	ctx   context.Context
	check func() error
}

func (p *plugin) pendingMarker(target string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(target)))
	return filepath.Join(p.host.GetPluginDir(inTreePluginName), pendingDirName, hex.EncodeToString(sum[:16]))
}

// beginMount undoes what an earlier, unfinished call left at target, then
// marks a call as pending. It reports whether target was already mounted
// by a finished call (nothing to do), and else the call to make.
func (p *plugin) beginMount(target string) (bool, *mountCall, error) {
	marker := p.pendingMarker(target)
	_, err := os.Stat(marker)
	left := err == nil
	if left {
		p.logger().Info("Flexvolume call at this target did not finish before; undoing what it mounted", "target", target)
		if err := p.undoMount(target); err != nil {
			return false, nil, fmt.Errorf("undoing the unfinished flexvolume call at %s: %w", target, err)
		}
	}
	mounted, err := prepareMountPoint(p.host.GetMounter(), target)
	if err != nil || mounted {
		return mounted, nil, err
	}
	call := &mountCall{ctx: p.ctx, check: func() error { return nil }}
	if o, ok := p.host.GetMounter().(podOperator); ok {
		if call.ctx, call.check, err = o.PodOperation(p.ctx, target); err != nil {
			return false, nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(marker), 0o750); err != nil {
		return false, nil, fmt.Errorf("marking the flexvolume call at %s as pending: %w", target, err)
	}
	if err := os.WriteFile(marker, []byte(target+"\n"), 0o640); err != nil {
		return false, nil, fmt.Errorf("marking the flexvolume call at %s as pending: %w", target, err)
	}
	return false, call, nil
}

// endMount finishes call, begun with beginMount. After success, a mount
// the driver made in a mount pod must have reached the host (call.check,
// on the pod the call ran in). After a failure, whatever the call mounted
// is undone; the marker stays when that fails, so that the next call tries
// again.
func (p *plugin) endMount(target string, call *mountCall, callErr error) error {
	if callErr == nil {
		callErr = call.check()
	}
	if callErr == nil {
		return p.clearPending(target, nil)
	}
	if err := p.undoMount(target); err != nil {
		return fmt.Errorf("%w; and unmounting what the call left at %s failed (the next try undoes it first): %w", callErr, target, err)
	}
	return p.clearPending(target, callErr)
}

func (p *plugin) clearPending(target string, callErr error) error {
	if err := os.Remove(p.pendingMarker(target)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errors.Join(callErr, fmt.Errorf("clearing the pending mark of %s: %w", target, err))
	}
	return callErr
}

// undoMount unmounts everything mounted at target, on the host and (through
// the kubelet's mounter) in the mount pod that made it.
func (p *plugin) undoMount(target string) error {
	m := p.host.GetMounter()
	for range maxStackedMounts {
		isMnt, err := m.IsMountPoint(target)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !isMnt) {
			break
		}
		if err != nil && !mount.IsCorruptedMnt(err) {
			return err
		}
		p.logger().Info("Unmounting what an unfinished flexvolume call mounted", "target", target)
		if err := m.Unmount(target); err != nil {
			return err
		}
	}
	if v, ok := m.(podOperator); ok {
		// A mount that stayed in the pod is undone there; its error only
		// says so.
		_ = v.VerifyPodMount(target)
	}
	return nil
}
