package flexdrivers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	utilstrings "k8s.io/utils/strings"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// Publisher keeps a directory in step with the drivers mount pods serve:
// a driver appears when a Ready pod serves it, and goes when no Ready pod
// serves it and the pod it was published for no longer runs.
type Publisher struct {
	dir    string
	finder mountpod.Finder
	kick   chan struct{}
	// invalid holds the invalid driver names already logged.
	invalid sync.Map
}

// New returns a Publisher for dir.
func New(dir string, finder mountpod.Finder) *Publisher {
	return &Publisher{dir: dir, finder: finder, kick: make(chan struct{}, 1)}
}

// markerName is the file that marks a directory as a Publisher's own. A
// directory without it is never emptied.
const markerName = ".nodeplug-mount-pod-drivers"

// Reset empties dir, which a Publisher created, or creates it: run before
// the prober starts, so that placeholders from an earlier run are not
// initialised before the pod cache can say who serves them. It refuses a
// directory that holds anything but lacks the marker file a Publisher
// writes: pointed by mistake at a real directory (the flexvolume plugin
// dir, /), it must not erase it.
func (p *Publisher) Reset() error {
	if err := CheckDir(p.dir); err != nil {
		return err
	}
	entries, err := os.ReadDir(p.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(p.dir, 0o750); err != nil {
			return fmt.Errorf("creating %s: %w", p.dir, err)
		}
		return writeMarker(p.dir)
	case err != nil:
		return fmt.Errorf("reading %s: %w", p.dir, err)
	}
	if _, err := os.Lstat(filepath.Join(p.dir, markerName)); err != nil {
		if len(entries) > 0 {
			return fmt.Errorf("%s holds %d entries and no %s file: nodeplug did not create it and will not empty it; "+
				"choose an empty or new directory for the drivers of mount pods", p.dir, len(entries), markerName)
		}
		return writeMarker(p.dir)
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == markerName {
			continue
		}
		if err := os.RemoveAll(filepath.Join(p.dir, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("clearing %s: %w", p.dir, err))
		}
	}
	return errors.Join(errs...)
}

func writeMarker(dir string) error {
	body := []byte("Flexvolume driver placeholders of nodeplug's mount pods; emptied at every start.\n")
	if err := os.WriteFile(filepath.Join(dir, markerName), body, 0o640); err != nil {
		return fmt.Errorf("marking %s as nodeplug's: %w", dir, err)
	}
	return nil
}

// systemDirs are never a driver directory, whatever their marker says.
var systemDirs = []string{"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc", "/root",
	"/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/var/lib", "/var/run", "/var/tmp", "/usr/libexec"}

// CheckDir refuses a directory that must never be a Publisher's: a
// relative path, a system directory, or one inside or holding a flexvolume
// plugin directory in forbidden (--volume-plugin-dir,
// --flex-volume-plugin-dir).
func CheckDir(dir string, forbidden ...string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("mount pod driver dir %q is not an absolute path", dir)
	}
	clean := filepath.Clean(dir)
	for _, s := range systemDirs {
		if clean == s {
			return fmt.Errorf("mount pod driver dir %s is a system directory; use a directory of its own, such as %s", dir, DefaultControllerManagerDir)
		}
	}
	for _, f := range forbidden {
		if f == "" {
			continue
		}
		f = filepath.Clean(f)
		if inside(clean, f) || inside(f, clean) {
			return fmt.Errorf("mount pod driver dir %s overlaps the flexvolume plugin dir %s, whose drivers it would erase; use a directory of its own, such as %s",
				dir, f, DefaultControllerManagerDir)
		}
	}
	return nil
}

// DefaultControllerManagerDir is the controller-manager's default
// --experimental-mount-pod-driver-dir: under /run, which only root may
// write, not a world-writable temp dir.
const DefaultControllerManagerDir = "/run/nodeplug/mount-pod-drivers"

func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// Handler returns an informer handler that asks for a Sync on any change.
func (p *Publisher) Handler() cache.ResourceEventHandler {
	kick := func(any) { p.Kick() }
	return cache.ResourceEventHandlerFuncs{AddFunc: kick, UpdateFunc: func(_, n any) { kick(n) }, DeleteFunc: kick}
}

// Kick asks Run for a Sync; it never blocks.
func (p *Publisher) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run syncs on every kick until ctx ends. Failed syncs are logged and
// retried at the next kick.
func (p *Publisher) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		}
		if _, err := p.Sync(ctx); err != nil {
			logger.Error(err, "Publishing flexvolume drivers of mount pods failed", "dir", p.dir)
		}
	}
}

// Sync makes dir hold exactly one placeholder per served flex driver, and
// returns the names of the drivers served.
func (p *Publisher) Sync(ctx context.Context) ([]string, error) {
	want := p.desired(ctx)
	have, err := os.ReadDir(p.dir)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p.dir, err)
	}
	var errs []error
	for _, e := range have {
		if _, ok := want[e.Name()]; ok || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if uid := p.publishedFor(e.Name()); uid != "" && p.finder.Runs(uid) {
			continue // its pod is not Ready for now, but still runs
		}
		klog.FromContext(ctx).Info("Flexvolume driver no longer served by a mount pod", "dirName", e.Name())
		if err := os.RemoveAll(filepath.Join(p.dir, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", e.Name(), err))
		}
	}
	var served []string
	for dirName, pl := range want {
		served = append(served, pl.plugin)
		if err := p.write(ctx, dirName, pl); err != nil {
			errs = append(errs, err)
		}
	}
	return served, errors.Join(errs...)
}

type placeholder struct {
	plugin  string
	exe     string
	content []byte
}

// publishedFor returns the UID of the pod a published placeholder names.
func (p *Publisher) publishedFor(dirName string) types.UID {
	d, err := driver.ParseDirName(dirName)
	if err != nil {
		return ""
	}
	body, err := os.ReadFile(filepath.Join(p.dir, dirName, d.Executable()))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(body), "\n") {
		if uid, ok := strings.CutPrefix(line, uidLinePrefix); ok {
			return types.UID(strings.TrimSpace(uid))
		}
	}
	return ""
}

const uidLinePrefix = "# pod-uid: "

// desired returns the placeholders by driver directory name. A driver is
// published when a Ready pod serves it, and stays published while that pod
// runs (Sync).
func (p *Publisher) desired(ctx context.Context) map[string]placeholder {
	out := map[string]placeholder{}
	for plugin, t := range p.finder.Served() {
		if strings.HasPrefix(plugin, "kubernetes.io/") {
			continue
		}
		d, err := driver.ParseDirName(utilstrings.EscapeQualifiedName(plugin))
		if err != nil {
			if _, seen := p.invalid.LoadOrStore(plugin, true); !seen {
				klog.FromContext(ctx).Info("Mount pod label names an invalid flexvolume driver", "driver", plugin, "pod", t.String(), "err", err)
			}
			continue
		}
		out[d.String()] = placeholder{plugin: d.PluginName(), exe: d.Executable(), content: render(plugin, t)}
	}
	return out
}

// render returns the placeholder script. It names the serving pod, so a
// new pod (a new version) changes the file and the prober runs init again.
func render(plugin string, t mountpod.Target) []byte {
	msg := fmt.Sprintf("flexvolume driver %s is served by mount pod %s/%s; only the kubelet runs it, in that pod", plugin, t.Namespace, t.Name)
	return fmt.Appendf(nil, "#!/bin/sh\n# nodeplug placeholder: driver %s, pod %s/%s, container %s.\n%s%s\n"+
		"echo '{\"status\":\"Failure\",\"message\":\"%s\"}'\nexit 1\n", plugin, t.Namespace, t.Name, t.Container, uidLinePrefix, t.UID, msg)
}

// write puts a placeholder in place atomically, if it differs.
func (p *Publisher) write(ctx context.Context, dirName string, pl placeholder) error {
	dir := filepath.Join(p.dir, dirName)
	final := filepath.Join(dir, pl.exe)
	if cur, err := os.ReadFile(final); err == nil && bytes.Equal(cur, pl.content) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	tmp := filepath.Join(dir, "."+pl.exe+".tmp")
	if err := os.WriteFile(tmp, pl.content, 0o750); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("publishing %s: %w", final, err)
	}
	klog.FromContext(ctx).Info("Flexvolume driver served by a mount pod", "dirName", dirName, "path", final)
	return nil
}
