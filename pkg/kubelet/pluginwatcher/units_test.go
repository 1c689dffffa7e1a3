package pluginwatcher

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2/textlogger"
)

func TestSocketCarriesName(t *testing.T) {
	for name, tc := range map[string]struct {
		rel, plugin string
		want        bool
	}{
		"bare name":                    {"foo", "foo", true},
		"name.sock":                    {"foo.sock", "foo", true},
		"design timestamp":             {"hostpath.csi.k8s.io.1700000000", "hostpath.csi.k8s.io", true},
		"node-driver-registrar":        {"hostpath.csi.k8s.io-reg.sock", "hostpath.csi.k8s.io", true},
		"DRA rolling update":           {"gpu.example.com-6f1c-reg.sock", "gpu.example.com", true},
		"underscore suffix":            {"foo_1.sock", "foo", true},
		"nested directory, base name":  {"csi/foo-reg.sock", "foo", true},
		"resource name escaped":        {"example.com_gpu.17.sock", "example.com/gpu", true},
		"resource name as directories": {"example.com/gpu.17.sock", "example.com/gpu", true},
		"longer name is not a match":   {"foobar.sock", "foo", false},
		"different name":               {"dp.1700000000", "example.com/resource", false},
		"empty plugin name":            {"foo.sock", "", false},
		"name only in directory":       {"foo/bar.sock", "foo", false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := SocketCarriesName(tc.rel, tc.plugin); got != tc.want {
				t.Errorf("SocketCarriesName(%q, %q) = %v, want %v", tc.rel, tc.plugin, got, tc.want)
			}
		})
	}
}

func TestThrottleKey(t *testing.T) {
	for name, tc := range map[string]struct{ rel, want string }{
		"timestamped socket":       {"flood.123.sock", "flood"},
		"timestamp without .sock":  {"dp.1700000000", "dp"},
		"dotted name":              {"hostpath.csi.k8s.io.42.sock", "hostpath.csi.k8s.io"},
		"registrar suffix kept":    {"hostpath.csi.k8s.io-reg.sock", "hostpath.csi.k8s.io-reg"},
		"digits after dash kept":   {"plugin-17.sock", "plugin-17"},
		"nested keeps directories": {"example.com/gpu.9.sock", "example.com/gpu"},
		"digit-only base kept":     {"sub/123.sock", "sub/123"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := throttleKey(tc.rel); got != tc.want {
				t.Errorf("throttleKey(%q) = %q, want %q", tc.rel, got, tc.want)
			}
		})
	}
}

func TestCheckIdentity(t *testing.T) {
	for name, tc := range map[string]struct {
		policy      IdentityPolicy
		rel, plugin string
		wantWarn    bool
		wantErr     bool
	}{
		"match":                {IdentityReject, "a.sock", "a", false, false},
		"mismatch rejected":    {IdentityReject, "b.sock", "a", false, true},
		"mismatch warned":      {IdentityWarn, "b.sock", "a", true, true},
		"empty name rejected":  {IdentityWarn, "b.sock", "", false, true},
		"empty name, policy R": {IdentityReject, "b.sock", "", false, true},
	} {
		t.Run(name, func(t *testing.T) {
			warn, err := checkIdentity(tc.policy, tc.rel, tc.plugin)
			if warn != tc.wantWarn || (err != nil) != tc.wantErr {
				t.Errorf("checkIdentity = (%v, %v), want warn=%v err=%v", warn, err, tc.wantWarn, tc.wantErr)
			}
		})
	}
}

func TestValidatePluginType(t *testing.T) {
	for name, tc := range map[string]struct {
		typ     string
		wantErr bool
	}{
		"CSI":                       {CSIPlugin, false},
		"device plugin":             {DevicePlugin, false},
		"DRA":                       {DRAPlugin, false},
		"nodeplug type":             {NodeplugTypePrefix + "MountUtility", false},
		"empty":                     {"", true},
		"lower case":                {"csiPlugin", true},
		"missing Plugin suffix":     {"Storage", true},
		"foreign domain":            {"example.com/Thing", true},
		"nodeplug prefix, no name":  {NodeplugTypePrefix, true},
		"nodeplug name lower case":  {NodeplugTypePrefix + "mount", true},
		"spaces are not allowed":    {"My Plugin", true},
		"slash in upstream-style":   {"CSI/Plugin", true},
		"trailing newline injected": {"CSIPlugin\n", true},
	} {
		t.Run(name, func(t *testing.T) {
			if err := ValidatePluginType(tc.typ); (err != nil) != tc.wantErr {
				t.Errorf("ValidatePluginType(%q) = %v, wantErr %v", tc.typ, err, tc.wantErr)
			}
		})
	}
}

func TestNewWatcherBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		dir  string
		opts Options
		want string
	}{
		"empty dir":           {"", Options{}, "absolute path"},
		"relative dir":        {"plugins", Options{}, "absolute path"},
		"bad policy":          {"/tmp/x", Options{IdentityPolicy: "Maybe"}, "Reject or Warn"},
		"negative timeout":    {"/tmp/x", Options{RPCTimeout: -time.Second}, "negative"},
		"max below base":      {"/tmp/x", Options{RetryBase: time.Second, RetryMax: time.Millisecond}, "retry max"},
		"negative rate":       {"/tmp/x", Options{ThrottleRate: -1}, "throttle"},
		"negative burst":      {"/tmp/x", Options{ThrottleBurst: -1}, "throttle"},
		"negative in-flight":  {"/tmp/x", Options{MaxInFlight: -2}, "in-flight"},
		"negative log budget": {"/tmp/x", Options{LogBudget: -1}, "log budget"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewWatcher(tc.dir, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewWatcher error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestAddHandlerBadInput(t *testing.T) {
	w, err := NewWatcher("/tmp/unused", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		typ string
		h   Handler
	}{
		"nil handler":  {CSIPlugin, nil},
		"invalid type": {"bogus", HandlerFuncs{}},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("AddHandler did not panic")
				}
			}()
			w.AddHandler(tc.typ, tc.h)
		})
	}
}

func TestNegotiateVersion(t *testing.T) {
	for name, tc := range map[string]struct {
		offered, supported []string
		want               string
		wantErr            bool
	}{
		"kubelet preference wins": {[]string{"v1", "v2"}, []string{"v2", "v1"}, "v2", false},
		"single common":           {[]string{"v1beta1"}, []string{"v1beta1"}, "v1beta1", false},
		"none in common":          {[]string{"v9"}, []string{"v1"}, "", true},
		"plugin offers nothing":   {nil, []string{"v1"}, "", true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := NegotiateVersion(tc.offered, tc.supported)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("NegotiateVersion = (%q, %v), want (%q, err=%v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestHandlerFuncsDefaults(t *testing.T) {
	ctx := context.Background()
	var h Handler = HandlerFuncs{}
	if err := h.ValidatePlugin(ctx, "n", "e", nil); err != nil {
		t.Error(err)
	}
	if err := h.RegisterPlugin(ctx, "n", "e", nil, nil); err != nil {
		t.Error(err)
	}
	h.DeRegisterPlugin(ctx, "n", "e")
}

func TestThrottler(t *testing.T) {
	var mu sync.Mutex
	var released []string
	th := newThrottler(50, 2, func(p string) { mu.Lock(); released = append(released, p); mu.Unlock() })
	defer th.stop()
	for _, p := range []string{"a1", "a2"} {
		if !th.admit("a", p) {
			t.Fatalf("%s throttled within burst", p)
		}
	}
	for _, p := range []string{"a3", "a4", "a5"} {
		if th.admit("a", p) {
			t.Fatalf("%s admitted beyond burst", p)
		}
	}
	if !th.admit("b", "b1") {
		t.Fatal("another key was throttled")
	}
	th.forget("a4")
	eventually(t, "two releases", func() bool { mu.Lock(); defer mu.Unlock(); return len(released) == 2 })
	mu.Lock()
	got := strings.Join(released, ",")
	mu.Unlock()
	if got != "a5,a3" {
		t.Errorf("released %s, want newest first without the forgotten one: a5,a3", got)
	}
	if !th.admit("a", "a5") || th.parkedCount() != 0 {
		t.Error("a released path must be admitted with the token reserved for it")
	}
}

func TestReporterRateLimits(t *testing.T) {
	var buf bytes.Buffer
	r := newReporter(Options{LogInterval: time.Hour, LogBudget: 3})
	r.setLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf))))
	for i := 0; i < 100; i++ {
		r.info("Plugin registered", "same-plugin", "")
	}
	for _, k := range []string{"p1", "p2", "p3", "p4"} {
		r.info("Plugin registered", k, "")
	}
	r.flush()
	lines := strings.Count(buf.String(), "\n")
	if lines != 4 {
		t.Errorf("got %d lines, want 3 (budget) + 1 summary:\n%s", lines, buf.String())
	}
	if !strings.Contains(buf.String(), "count=101") {
		t.Errorf("summary does not count the 101 suppressed lines:\n%s", buf.String())
	}
}

// TestRegisteredByTypeIsMaintained: the per-type counts follow every Put,
// Update and Delete, including a Put that replaces a registered instance.
func TestRegisteredByTypeIsMaintained(t *testing.T) {
	a := newActualState()
	csi := func(path, name string, reg bool) instance {
		return instance{path: path, key: pluginKey{typ: CSIPlugin, name: name}, registered: reg}
	}
	steps := []struct {
		name string
		do   func()
		want map[string]int
	}{
		{"put unregistered", func() { a.Put(csi("/a", "x", false)) }, map[string]int{}},
		{"register by update", func() { a.Update("/a", func(i *instance) { i.registered = true }) }, map[string]int{CSIPlugin: 1}},
		{"second plugin", func() { a.Put(csi("/b", "y", true)) }, map[string]int{CSIPlugin: 2}},
		{"replace registered path", func() { a.Put(csi("/b", "y", false)) }, map[string]int{CSIPlugin: 1}},
		{"delete registered", func() { a.Delete("/a") }, map[string]int{}},
		{"delete unknown", func() { a.Delete("/nope") }, map[string]int{}},
	}
	for _, s := range steps {
		s.do()
		if got := a.RegisteredByType(); !maps.Equal(got, s.want) {
			t.Fatalf("%s: RegisteredByType() = %v, want %v", s.name, got, s.want)
		}
	}
}
