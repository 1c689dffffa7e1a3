package driver

import "time"

// Command is a driver command, the first argument of every driver call.
type Command string

// The driver commands. The argument order of each is documented on the
// Driver method that issues it.
const (
	CmdInit          Command = "init"
	CmdGetVolumeName Command = "getvolumename"
	CmdAttach        Command = "attach"
	CmdDetach        Command = "detach"
	CmdWaitForAttach Command = "waitforattach"
	CmdIsAttached    Command = "isattached"
	CmdMountDevice   Command = "mountdevice"
	CmdUnmountDevice Command = "unmountdevice"
	CmdMount         Command = "mount"
	CmdUnmount       Command = "unmount"
	CmdExpandVolume  Command = "expandvolume"
	CmdExpandFS      Command = "expandfs"
)

// Commands lists every command, in protocol order.
var Commands = []Command{
	CmdInit, CmdGetVolumeName, CmdAttach, CmdDetach, CmdWaitForAttach, CmdIsAttached,
	CmdMountDevice, CmdUnmountDevice, CmdMount, CmdUnmount, CmdExpandVolume, CmdExpandFS,
}

// index returns the bit position of c for the "Not supported" cache, or -1.
func (c Command) index() int {
	for i, x := range Commands {
		if x == c {
			return i
		}
	}
	return -1
}

// Status values a driver may report.
const (
	StatusSuccess      = "Success"
	StatusFailure      = "Failure"
	StatusNotSupported = "Not supported"
)

// Option keys of the JSON options argument.
const (
	OptionFSType             = "kubernetes.io/fsType"
	OptionReadWrite          = "kubernetes.io/readwrite"
	OptionPVOrVolumeName     = "kubernetes.io/pvOrVolumeName"
	OptionPodName            = "kubernetes.io/pod.name"
	OptionPodNamespace       = "kubernetes.io/pod.namespace"
	OptionPodUID             = "kubernetes.io/pod.uid"
	OptionServiceAccountName = "kubernetes.io/serviceAccount.name"
	OptionFSGroup            = "kubernetes.io/mounterArgs.FsGroup"
	// OptionSecretPrefix is followed by "/<key>"; values are base64 encoded.
	OptionSecretPrefix = "kubernetes.io/secret"
)

// Limits and default timeouts of driver calls.
const (
	// MaxOutputBytes bounds what is read from each of stdout and stderr.
	// A driver that writes more gets ErrOutputTooLarge.
	MaxOutputBytes = 1 << 20
	// DefaultInitTimeout bounds "init", which nodeplug's prober runs while
	// it discovers drivers (upstream sets no bound; a driver whose init
	// hangs would stall discovery). --experimental-flex-init-timeout.
	DefaultInitTimeout = 30 * time.Second
	// DefaultCallTimeout bounds every other command except waitforattach,
	// whose bound comes from its caller. 0: none, as upstream, since a
	// driver's mountdevice may format a large disk or wait for a slow
	// backend. --experimental-flex-call-timeout sets one.
	DefaultCallTimeout time.Duration = 0
	// DefaultKillGrace is how long a timed-out call waits for the runner to
	// reap the killed process before it returns anyway.
	DefaultKillGrace = 3 * time.Second
)

// Capabilities is what a driver reports in the "capabilities" object of its
// init response. Keys the driver omits keep DefaultCapabilities.
type Capabilities struct {
	Attach           bool `json:"attach"`
	SELinuxRelabel   bool `json:"selinuxRelabel"`
	SupportsMetrics  bool `json:"supportsMetrics"`
	FSGroup          bool `json:"fsGroup"`
	RequiresFSResize bool `json:"requiresFSResize"`
}

// DefaultCapabilities returns the capabilities assumed for keys a driver does
// not report.
func DefaultCapabilities() Capabilities {
	return Capabilities{
		Attach:           true,
		SELinuxRelabel:   true,
		SupportsMetrics:  false,
		FSGroup:          true,
		RequiresFSResize: true,
	}
}

// Response is a driver's parsed status object.
type Response struct {
	Status     string `json:"status"`
	Message    string `json:"message,omitempty"`
	DevicePath string `json:"device,omitempty"`
	VolumeName string `json:"volumeName,omitempty"`
	Attached   bool   `json:"attached,omitempty"`
	// Capabilities is never nil after ParseResponse.
	Capabilities *Capabilities `json:"capabilities,omitempty"`
	// VolumeNewSize is the size in bytes an expand call reports.
	VolumeNewSize int64 `json:"volumeNewSize,omitempty"`
}
