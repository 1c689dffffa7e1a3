package driver

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// privateTmpfs mounts a private tmpfs on a new temporary directory, so that
// the mounts a test makes below it never propagate anywhere, and removes it
// with everything below when the test ends. It needs root (it fails
// instead of skipping under CI=true).
func privateTmpfs(t *testing.T) string {
	t.Helper()
	testutil.RequireMount(t)
	dir, err := os.MkdirTemp("", "csihpm")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("csihp-test", dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatalf("mounting a tmpfs: %v", err)
	}
	if err := unix.Mount("", dir, "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		t.Fatalf("making the tmpfs private: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

func TestPublishUnpublish(t *testing.T) {
	root := privateTmpfs(t)
	d := startDriver(t, func(c *Config) {
		c.DataDir, c.KubeletDir = filepath.Join(root, "data"), filepath.Join(root, "kubelet")
	})
	ctx := ctxFor(t)
	_, err := d.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo}})
	wantCode(t, err, codes.OK)
	target := filepath.Join(d.cfg.KubeletDir, "pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount")
	pub := &csi.NodePublishVolumeRequest{VolumeId: "pvc-1", TargetPath: target, VolumeCapability: rwo}
	_, err = d.node.NodePublishVolume(ctx, pub)
	wantCode(t, err, codes.OK)
	if err := os.WriteFile(filepath.Join(target, "f"), []byte("x"), 0o644); err != nil {
		t.Fatalf("writing through the published volume: %v", err)
	}
	if _, err := os.Stat(filepath.Join(d.cfg.DataDir, "pvc-1", "f")); err != nil {
		t.Fatalf("the file is not in the volume's directory: %v", err)
	}
	// Publishing again is no error and stacks no second mount.
	_, err = d.node.NodePublishVolume(ctx, pub)
	wantCode(t, err, codes.OK)

	// A read-only publication of the same volume for a second pod.
	roTarget := filepath.Join(d.cfg.KubeletDir, "pods/uid-2/volumes/kubernetes.io~csi/pv-1/mount")
	_, err = d.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "pvc-1", TargetPath: roTarget, VolumeCapability: rwo, Readonly: true})
	wantCode(t, err, codes.OK)
	if err := os.WriteFile(filepath.Join(roTarget, "g"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("writing to the read-only publication: %v, want EROFS", err)
	}

	stats, err := d.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "pvc-1", VolumePath: target})
	wantCode(t, err, codes.OK)
	bytes, inodes := stats.GetUsage()[0], stats.GetUsage()[1]
	if bytes.GetUnit() != csi.VolumeUsage_BYTES || bytes.GetTotal() != 16<<20 || bytes.GetUsed() <= 0 || bytes.GetAvailable() <= 0 {
		t.Fatalf("byte usage = %v, want the 16 MiB tmpfs with something used", bytes)
	}
	if inodes.GetUnit() != csi.VolumeUsage_INODES || inodes.GetTotal() <= 0 || inodes.GetUsed() <= 0 {
		t.Fatalf("inode usage = %v", inodes)
	}

	for _, tg := range []string{target, roTarget} {
		for i := range 2 { // the second call finds it unpublished already
			_, err = d.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "pvc-1", TargetPath: tg})
			wantCode(t, err, codes.OK)
			if mounted, err := isMountPoint(tg); err != nil || mounted {
				t.Fatalf("call %d: %s still mounted (%v)", i, tg, err)
			}
			if _, err := os.Stat(tg); !os.IsNotExist(err) {
				t.Fatalf("call %d: target %s not removed: %v", i, tg, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(d.cfg.DataDir, "pvc-1", "f")); err != nil {
		t.Fatalf("unpublishing lost the volume's data: %v", err)
	}
}

func TestNodeRefuses(t *testing.T) {
	d := startDriver(t, nil)
	_, err := d.ctrl.CreateVolume(ctxFor(t), &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo}})
	wantCode(t, err, codes.OK)
	pods := filepath.Join(d.cfg.KubeletDir, "pods")
	good := filepath.Join(pods, "uid/volumes/kubernetes.io~csi/pv/mount")
	multi := mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY)
	cases := map[string]struct {
		req  *csi.NodePublishVolumeRequest
		want codes.Code
	}{
		"no target":                {req: &csi.NodePublishVolumeRequest{VolumeId: "pvc-1", VolumeCapability: rwo}, want: codes.InvalidArgument},
		"relative target":          {req: &csi.NodePublishVolumeRequest{VolumeId: "pvc-1", TargetPath: "pods/x", VolumeCapability: rwo}, want: codes.InvalidArgument},
		"target outside pods/":     {req: &csi.NodePublishVolumeRequest{VolumeId: "pvc-1", TargetPath: "/etc", VolumeCapability: rwo}, want: codes.InvalidArgument},
		"target escaping pods/":    {req: &csi.NodePublishVolumeRequest{VolumeId: "pvc-1", TargetPath: pods + "/../../etc", VolumeCapability: rwo}, want: codes.InvalidArgument},
		"the pods dir itself":      {req: &csi.NodePublishVolumeRequest{VolumeId: "pvc-1", TargetPath: pods, VolumeCapability: rwo}, want: codes.InvalidArgument},
		"sibling with pods prefix": {req: &csi.NodePublishVolumeRequest{VolumeId: "pvc-1", TargetPath: pods + "2/x", VolumeCapability: rwo}, want: codes.InvalidArgument},
		"no capability":            {req: &csi.NodePublishVolumeRequest{VolumeId: "pvc-1", TargetPath: good}, want: codes.InvalidArgument},
		"multi-node capability":    {req: &csi.NodePublishVolumeRequest{VolumeId: "pvc-1", TargetPath: good, VolumeCapability: multi}, want: codes.InvalidArgument},
		"unknown volume":           {req: &csi.NodePublishVolumeRequest{VolumeId: "pvc-2", TargetPath: good, VolumeCapability: rwo}, want: codes.NotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := d.node.NodePublishVolume(ctxFor(t), tc.req)
			wantCode(t, err, tc.want)
			if _, err := os.Stat(good); !os.IsNotExist(err) {
				t.Fatalf("a refused request created the target: %v", err)
			}
		})
	}
	stats := map[string]struct {
		req  *csi.NodeGetVolumeStatsRequest
		want codes.Code
	}{
		"stats without a path":     {req: &csi.NodeGetVolumeStatsRequest{VolumeId: "pvc-1"}, want: codes.InvalidArgument},
		"stats with relative path": {req: &csi.NodeGetVolumeStatsRequest{VolumeId: "pvc-1", VolumePath: "x"}, want: codes.InvalidArgument},
		"stats of unknown volume":  {req: &csi.NodeGetVolumeStatsRequest{VolumeId: "pvc-2", VolumePath: good}, want: codes.NotFound},
		"stats of a missing path":  {req: &csi.NodeGetVolumeStatsRequest{VolumeId: "pvc-1", VolumePath: good}, want: codes.NotFound},
	}
	for name, tc := range stats {
		t.Run(name, func(t *testing.T) {
			_, err := d.node.NodeGetVolumeStats(ctxFor(t), tc.req)
			wantCode(t, err, tc.want)
		})
	}
	_, err = d.node.NodeUnpublishVolume(ctxFor(t), &csi.NodeUnpublishVolumeRequest{VolumeId: "pvc-1", TargetPath: "/etc"})
	wantCode(t, err, codes.InvalidArgument)
}

func TestNodeInfo(t *testing.T) {
	d := startDriver(t, nil)
	ctx := ctxFor(t)
	info, err := d.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	wantCode(t, err, codes.OK)
	if info.GetNodeId() != "node-1" || info.GetAccessibleTopology().GetSegments()["topology.hostpath.csi.nodeplug.io/node"] != "node-1" {
		t.Fatalf("NodeGetInfo = %v", info)
	}
	caps, err := d.node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	wantCode(t, err, codes.OK)
	if len(caps.GetCapabilities()) != 1 || caps.GetCapabilities()[0].GetRpc().GetType() != csi.NodeServiceCapability_RPC_GET_VOLUME_STATS {
		t.Fatalf("NodeGetCapabilities = %v, want GET_VOLUME_STATS only (no staging)", caps)
	}
}
