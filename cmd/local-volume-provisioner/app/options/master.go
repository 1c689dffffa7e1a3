package options

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// MasterOptions are the flags of the master.
type MasterOptions struct {
	Kubeconfig      string
	Namespace       string
	ConfigDir       string
	Image           string
	ImagePullPolicy string
	ProvisionerName string
	Workers         int

	KubeAPIQPS     float32
	KubeAPIBurst   int
	DiscoveryQPS   float64
	DiscoveryBurst int

	DiscoveryShards   int
	DiscoveryTTL      time.Duration
	DiscoveryDeadline time.Duration
	CleanupDeadline   time.Duration
	UnwipedRetention  time.Duration
	RetryBase         time.Duration
	RetryMax          time.Duration
	PriorityClassName string

	MetricsAddress string
	// CacheSyncTimeout is how long the master waits for an informer cache
	// before it logs what it needs and reports not ready.
	CacheSyncTimeout time.Duration

	// CheckCleanerPrograms rejects a configuration whose block cleaner
	// program is not in the master's filesystem.
	CheckCleanerPrograms bool

	// ReplacedMachinePolicy says what happens to the bound PVs of a machine
	// whose node name another machine took over.
	ReplacedMachinePolicy string
	// AdmissionPolicy is the ValidatingAdmissionPolicy into which the master
	// writes the blocked claims.
	AdmissionPolicy string

	LeaderElect   bool
	LeaseName     string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// FlagCleanupJobTTL is a flag the master accepts and ignores: a cleanup Job
// has no TTL, since a failed one is the lock of its path until the master
// has acted on its result.
const FlagCleanupJobTTL = "cleanup-job-ttl"

// NewMasterOptions returns the defaults. The namespace and image default to
// the POD_NAMESPACE and JOB_IMAGE environment variables.
func NewMasterOptions() *MasterOptions {
	return &MasterOptions{
		Namespace: os.Getenv("POD_NAMESPACE"), ConfigDir: "/etc/provisioner/config", Image: os.Getenv("JOB_IMAGE"),
		ImagePullPolicy: string(v1.PullIfNotPresent), ProvisionerName: "nodeplug.io/local-volume-provisioner", Workers: 4,
		KubeAPIQPS: 50, KubeAPIBurst: 100, DiscoveryQPS: 10, DiscoveryBurst: 20,
		DiscoveryShards: 1, DiscoveryTTL: 5 * time.Minute, DiscoveryDeadline: 5 * time.Minute,
		CleanupDeadline: 12 * time.Hour, UnwipedRetention: 30 * 24 * time.Hour, RetryBase: 10 * time.Second, RetryMax: 30 * time.Minute,
		MetricsAddress: ":8080", CacheSyncTimeout: 2 * time.Minute, CheckCleanerPrograms: true, ReplacedMachinePolicy: "BlockPods",
		AdmissionPolicy: "local-volume-provisioner-replaced-machine-claims", LeaderElect: true, LeaseName: "local-volume-provisioner",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
	}
}

// AddFlags registers the flags.
func (o *MasterOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig; empty means in-cluster.")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "Namespace of the Jobs and the leader lease (default $POD_NAMESPACE).")
	fs.StringVar(&o.ConfigDir, "config-dir", o.ConfigDir, "Directory where the provisioner ConfigMap is mounted.")
	fs.StringVar(&o.Image, "job-image", o.Image, "Image of discovery and cleanup Jobs (default $JOB_IMAGE).")
	fs.StringVar(&o.ImagePullPolicy, "job-image-pull-policy", o.ImagePullPolicy, "Pull policy of Job images.")
	fs.StringVar(&o.ProvisionerName, "provisioner-name", o.ProvisionerName, "Value of the pv.kubernetes.io/provisioned-by annotation.")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Concurrent syncs.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Client QPS towards the apiserver.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Client burst towards the apiserver.")
	fs.Float64Var(&o.DiscoveryQPS, "discovery-qps", o.DiscoveryQPS, "Discovery Jobs created per second, cluster-wide.")
	fs.IntVar(&o.DiscoveryBurst, "discovery-burst", o.DiscoveryBurst, "Burst of discovery Job creations.")
	fs.IntVar(&o.DiscoveryShards, "discovery-shards", o.DiscoveryShards, fmt.Sprintf("Containers that discovery pods start with, each carrying 4 KiB of report (1-%d). A node whose report needs more asks for them and gets them from then on.", report.MaxShards))
	fs.DurationVar(&o.DiscoveryTTL, "discovery-job-ttl", o.DiscoveryTTL, "ttlSecondsAfterFinished of discovery Jobs.")
	fs.DurationVar(&o.DiscoveryDeadline, "discovery-job-deadline", o.DiscoveryDeadline, "activeDeadlineSeconds of discovery Jobs.")
	// Accepted, so that manifests that pass it keep working, and ignored.
	fs.Duration(FlagCleanupJobTTL, 24*time.Hour, "Ignored: cleanup Jobs have no ttlSecondsAfterFinished.")
	_ = fs.MarkDeprecated(FlagCleanupJobTTL, "cleanup Jobs have no TTL: the master deletes each once it has acted on its result; the flag is ignored")
	fs.DurationVar(&o.CleanupDeadline, "cleanup-job-deadline", o.CleanupDeadline, "activeDeadlineSeconds of cleanup Jobs, Pending included: a Job past it fails, with a CleanupFailed Event, and is retried. Raise it for block cleaners that take longer on your largest disk; 0 means none.")
	fs.DurationVar(&o.UnwipedRetention, "unwiped-disk-retention", o.UnwipedRetention, "How long a disk remembered as unwiped (dropped with a tenant's data on it) under a weak identity (one only its node tells apart) is kept once its node has left the cluster: no Node and no NodeDiskState. Strong identities never expire. 0 keeps every entry until its disk is wiped; the memory, shared by every installation, is bounded (10,000 disks), and a disk past the bound keeps its PV.")
	fs.DurationVar(&o.RetryBase, "retry-base", o.RetryBase, "First backoff after a failed Job; doubles per failure.")
	fs.DurationVar(&o.RetryMax, "retry-max", o.RetryMax, "Largest backoff after failed Jobs.")
	fs.StringVar(&o.PriorityClassName, "job-priority-class", o.PriorityClassName, "priorityClassName of Job pods.")
	fs.StringVar(&o.MetricsAddress, "metrics-address", o.MetricsAddress, "Address of /metrics, /healthz and /readyz; empty disables.")
	fs.DurationVar(&o.CacheSyncTimeout, "cache-sync-timeout", o.CacheSyncTimeout, "How long the leader waits for an informer cache to sync before it logs the resource and the rights it needs (list, watch) and reports not ready on /readyz; it keeps waiting.")
	fs.BoolVar(&o.CheckCleanerPrograms, "check-cleaner-programs", o.CheckCleanerPrograms, "Refuse a configuration whose blockCleanerCommand names a program that is not an executable in this container. The master runs the image of the cleanup Jobs (--job-image); turn this off if it does not.")
	fs.StringVar(&o.ReplacedMachinePolicy, "replaced-machine-policy", o.ReplacedMachinePolicy, "What happens to a bound PV when another machine (another machineID or systemUUID) registers under its node's name: BlockPods keeps the PV, marks it and writes its claim into the admission policy named by --replaced-machine-admission-policy, which refuses new pods that use the claim; Warn keeps and marks the PV only.")
	fs.StringVar(&o.AdmissionPolicy, "replaced-machine-admission-policy", o.AdmissionPolicy, "The ValidatingAdmissionPolicy whose blockedClaims variable the master keeps (deploy/local-volume-provisioner/admission-policy.yaml); under BlockPods the master needs get, list, watch and update on it; under Warn it does not use it.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader among replicas with a Lease.")
	fs.StringVar(&o.LeaseName, "leader-elect-lease-name", o.LeaseName, "Name of the leader Lease.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "Lease duration.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "Renew deadline.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "Retry period.")
}

// Validate checks the flags.
func (o *MasterOptions) Validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace (or $POD_NAMESPACE) is required"))
	}
	if o.Image == "" {
		errs = append(errs, errors.New("--job-image (or $JOB_IMAGE) is required"))
	}
	switch v1.PullPolicy(o.ImagePullPolicy) {
	case v1.PullAlways, v1.PullIfNotPresent, v1.PullNever:
	default:
		errs = append(errs, fmt.Errorf("--job-image-pull-policy %q is not Always, IfNotPresent or Never", o.ImagePullPolicy))
	}
	if o.Workers < 1 || o.KubeAPIQPS <= 0 || o.KubeAPIBurst < 1 || o.DiscoveryQPS <= 0 || o.DiscoveryBurst < 1 {
		errs = append(errs, errors.New("--workers, --kube-api-qps, --kube-api-burst, --discovery-qps and --discovery-burst must be positive"))
	}
	if o.DiscoveryShards < 1 || o.DiscoveryShards > report.MaxShards {
		errs = append(errs, fmt.Errorf("--discovery-shards must be between 1 and %d", report.MaxShards))
	}
	if o.CacheSyncTimeout <= 0 {
		errs = append(errs, errors.New("--cache-sync-timeout must be positive"))
	}
	if o.RetryBase <= 0 || o.RetryMax < o.RetryBase {
		errs = append(errs, errors.New("--retry-base must be positive and not above --retry-max"))
	}
	if o.ReplacedMachinePolicy != "BlockPods" && o.ReplacedMachinePolicy != "Warn" {
		errs = append(errs, fmt.Errorf("--replaced-machine-policy %q is not BlockPods or Warn", o.ReplacedMachinePolicy))
	}
	if o.AdmissionPolicy == "" {
		errs = append(errs, errors.New("--replaced-machine-admission-policy must not be empty"))
	}
	if o.UnwipedRetention < 0 {
		errs = append(errs, errors.New("--unwiped-disk-retention must not be negative"))
	}
	if o.CleanupDeadline < 0 {
		errs = append(errs, errors.New("--cleanup-job-deadline must not be negative"))
	}
	if o.LeaderElect && !(o.LeaseDuration > o.RenewDeadline && o.RenewDeadline > o.RetryPeriod && o.RetryPeriod > 0) {
		errs = append(errs, errors.New("leader election needs lease duration > renew deadline > retry period > 0"))
	}
	return errors.Join(errs...)
}
