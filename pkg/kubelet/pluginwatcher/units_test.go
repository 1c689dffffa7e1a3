package pluginwatcher

import (
	"context"
	"strings"
	"testing"
	"time"
)

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
