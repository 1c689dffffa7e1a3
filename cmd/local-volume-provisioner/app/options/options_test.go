package options

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

func TestJobTerminationLogDefaults(t *testing.T) {
	tests := []struct {
		name string
		got  string
	}{
		{name: "discover", got: NewDiscoverOptions().TerminationLog},
		{name: "cleanup", got: NewCleanupOptions().TerminationLog},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != jobs.TerminationMessagePath || strings.HasPrefix(tc.got, "/dev/") {
				t.Fatalf("default --termination-log %q, want %q (outside /dev)", tc.got, jobs.TerminationMessagePath)
			}
		})
	}
}

func TestMasterValidate(t *testing.T) {
	valid := func() *MasterOptions {
		o := NewMasterOptions()
		o.Namespace, o.Image = "lpv", "nodeplug/local-volume-provisioner:dev"
		return o
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("defaults with namespace and image must be valid: %v", err)
	}
	tests := []struct {
		name    string
		mutate  func(*MasterOptions)
		wantErr string
	}{
		{name: "no namespace", mutate: func(o *MasterOptions) { o.Namespace = "" }, wantErr: "--namespace"},
		{name: "no image", mutate: func(o *MasterOptions) { o.Image = "" }, wantErr: "--job-image"},
		{name: "bad pull policy", mutate: func(o *MasterOptions) { o.ImagePullPolicy = "Sometimes" }, wantErr: "--job-image-pull-policy"},
		{name: "zero qps", mutate: func(o *MasterOptions) { o.DiscoveryQPS = 0 }, wantErr: "must be positive"},
		{name: "too many shards", mutate: func(o *MasterOptions) { o.DiscoveryShards = 4 }, wantErr: "--discovery-shards"},
		{name: "retry max below base", mutate: func(o *MasterOptions) { o.RetryMax = time.Second }, wantErr: "--retry-base"},
		{name: "bad lease timings", mutate: func(o *MasterOptions) { o.RenewDeadline = time.Minute }, wantErr: "lease duration"},
		{name: "unknown replaced machine policy", mutate: func(o *MasterOptions) { o.ReplacedMachinePolicy = "Delete" }, wantErr: "--replaced-machine-policy"},
		{name: "zero cache sync timeout", mutate: func(o *MasterOptions) { o.CacheSyncTimeout = 0 }, wantErr: "--cache-sync-timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			tc.mutate(o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want %q, got %v", tc.wantErr, err)
			}
		})
	}
}

func TestWatcherValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*WatcherOptions)
		wantErr string
	}{
		{name: "no node", mutate: func(o *WatcherOptions) { o.NodeName = "" }, wantErr: "--node-name"},
		{name: "fast resync", mutate: func(o *WatcherOptions) { o.Resync = time.Millisecond }, wantErr: "--resync-period"},
		{name: "negative debounce", mutate: func(o *WatcherOptions) { o.Debounce = -1 }, wantErr: "--debounce"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewWatcherOptions()
			o.NodeName = "n"
			tc.mutate(o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want %q, got %v", tc.wantErr, err)
			}
		})
	}
}

// TestCleanupJobTTLIsAcceptedAndIgnored: manifests that pass
// --cleanup-job-ttl keep starting the master, whatever the value, since
// cleanup Jobs no longer have a TTL.
func TestCleanupJobTTLIsAcceptedAndIgnored(t *testing.T) {
	o := NewMasterOptions()
	o.Namespace, o.Image = "lpv", "nodeplug/local-volume-provisioner:dev"
	fs := pflag.NewFlagSet("master", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--" + FlagCleanupJobTTL + "=1m", "--retry-max=30m"}); err != nil {
		t.Fatalf("--%s is refused: %v", FlagCleanupJobTTL, err)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("--%s below --retry-max is refused: %v", FlagCleanupJobTTL, err)
	}
	if f := fs.Lookup(FlagCleanupJobTTL); f == nil || f.Deprecated == "" {
		t.Errorf("--%s is not marked deprecated", FlagCleanupJobTTL)
	}
}
