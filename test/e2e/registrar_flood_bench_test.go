//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

const (
	// registrarEnv names the node-driver-registrar binary the benchmark
	// runs; registrarSamplesEnv how many victims each phase times.
	registrarEnv        = "NODEPLUG_REGISTRAR"
	registrarSamplesEnv = "NODEPLUG_REGISTRAR_SAMPLES"
	registrarSamples    = 100
	// registrarWarmUp lets the flood's first connections and early
	// retries pass before the first victim: victims start into a flood
	// already under way.
	registrarWarmUp = 2 * time.Second
	// csiNodePoll is how often the benchmark looks at the node's CSINode,
	// as in issue 28's measurement.
	csiNodePoll = 50 * time.Millisecond
)

// registrarPhase is where a phase of BenchmarkRegistrarFlood runs the
// flood: nowhere, in a directory the watcher does not watch (the control:
// the host is as busy, the kubelet sees none of it), or in the watched
// directory.
type registrarPhase int

const (
	phaseAlone registrarPhase = iota
	phaseControl
	phaseFlood
)

var registrarPhases = []registrarPhase{phaseAlone, phaseControl, phaseFlood}

func (p registrarPhase) String() string { return [...]string{"alone", "control", "flood"}[p] }

// BenchmarkRegistrarFlood measures the real node-driver-registrar's
// registration through the kubelet's nodeplug plugin watcher: the time
// from starting the registrar (its CSI driver, csi-hostpath, already
// serving) to the driver listed in the node's CSINode, polled every 50 ms.
// Each victim has a driver name of its own and is stopped, and gone from
// CSINode, before the next starts. Three phases of NODEPLUG_REGISTRAR_SAMPLES
// victims (100 by default): alone, with the flood of
// registrar_flood_sockets_test.go in a directory nobody watches, and with
// it in the watched directory. It reports p50, mean and p99 per phase, the
// cost of the control and of the flood over the victim alone (mean and
// p50, in percent), and the p50 of each stage the registrar's log times
// (bind: its socket bound; getinfo: the kubelet's GetInfo; notify: the
// kubelet's NotifyRegistrationStatus; csinode: the driver seen in
// CSINode), each from the one before. NODEPLUG_REGISTRAR names the
// registrar binary. Run it with -benchtime 1x through hack/e2e.sh (see
// docs/benchmarks.md).
func BenchmarkRegistrarFlood(b *testing.B) {
	r := newRegistrarRig(b)
	lat := map[registrarPhase][]registrarSample{}
	b.ResetTimer()
	for round := range b.N {
		for _, ph := range registrarPhases {
			lat[ph] = append(lat[ph], r.phase(b, ph, round)...)
		}
	}
	b.StopTimer()
	reportRegistrarFlood(b, lat)
}

// registrarRig is what every victim of the benchmark needs.
type registrarRig struct {
	c         *framework.Cluster
	client    kubernetes.Interface // unthrottled for the poll
	node      *framework.Node
	registrar string // node-visible
	hostpath  string
	regDir    string // as the node sees it
	samples   int
}

func newRegistrarRig(b *testing.B) *registrarRig {
	bin := os.Getenv(registrarEnv)
	if bin == "" {
		b.Fatalf("%s is not set: set it to the path of a node-driver-registrar binary (e.g. v2.17.0 built from its release source)", registrarEnv)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		b.Fatalf("%s: %v; set it to the path of a node-driver-registrar binary", registrarEnv, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		b.Fatalf("%s=%s is not an executable file; set it to the path of a node-driver-registrar binary", registrarEnv, bin)
	}
	samples := registrarSamples
	if s := os.Getenv(registrarSamplesEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q is not a positive number of victims per phase", registrarSamplesEnv, s)
		}
		samples = n
	}
	c := framework.Connect(b)
	c.RequireFlag(b, "kubelet", "--experimental-plugin-registration-dir")
	regDir := os.Getenv("E2E_PLUGIN_REGISTRATION_DIR")
	if regDir == "" {
		b.Fatal("E2E_PLUGIN_REGISTRATION_DIR is not set; run the e2e suite with hack/e2e.sh")
	}
	// A client of its own: client-go's default 5 requests/s would turn
	// the 50 ms poll into a 200 ms one once its burst of 10 is spent.
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 100, 200
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatalf("client: %v", err)
	}
	return &registrarRig{c: c, client: client, node: c.Node, registrar: c.NodeVisible(b, bin),
		hostpath: filepath.Join(c.BinDir, "csi-hostpath"), regDir: regDir, samples: samples}
}

// phase times r.samples victims with the flood placed as ph asks; the
// flood is stopped, and its sockets gone, when it returns.
func (r *registrarRig) phase(b *testing.B, ph registrarPhase, round int) []registrarSample {
	b.StopTimer()
	defer b.StartTimer()
	var flood *socketFlood
	switch ph {
	case phaseControl:
		flood = startSocketFlood(b, b.TempDir())
	case phaseFlood:
		flood = startSocketFlood(b, r.node.HostPath(b, r.regDir))
	}
	began := time.Now()
	if flood != nil {
		time.Sleep(registrarWarmUp)
	}
	var out []registrarSample
	for i := range r.samples {
		b.StartTimer()
		s := r.sample(b, fmt.Sprintf("rf%d%c%d.np.io", round, ph.String()[0], i))
		b.StopTimer()
		if testing.Verbose() {
			b.Logf("%v victim %d: %v (%v)", ph, i, s.total.Round(time.Millisecond), s.stagesString())
		}
		out = append(out, s)
	}
	if flood != nil {
		flood.stop()
		b.Logf("%v: the flood bound %.0f sockets/s", ph, flood.bindRate(time.Since(began)))
	}
	return out
}

// reportRegistrarFlood reports, per phase, the p50, mean and p99 in ms of
// the time to CSINode and of the time to the registrar's notification
// ("notified": not rounded up to the next poll of CSINode), the control's
// and the flood's cost over the victim alone in percent, and the p50 of
// each stage.
func reportRegistrarFlood(b *testing.B, lat map[registrarPhase][]registrarSample) {
	totals := map[registrarPhase][]time.Duration{}
	notified := map[registrarPhase][]time.Duration{}
	for _, ph := range registrarPhases {
		for _, s := range lat[ph] {
			totals[ph] = append(totals[ph], s.total)
			notified[ph] = append(notified[ph], s.total-s.stages[len(s.stages)-1])
		}
		reportSpread(b, ph.String()+"-", totals[ph])
		reportSpread(b, ph.String()+"-notified-", notified[ph])
		for i, st := range registrarStages {
			var ds []time.Duration
			for _, s := range lat[ph] {
				ds = append(ds, s.stages[i])
			}
			b.ReportMetric(ms(quantile(ds, 0.5)), ph.String()+"-"+st.name+"-p50-ms")
		}
	}
	for _, ph := range []registrarPhase{phaseControl, phaseFlood} {
		reportCost(b, ph.String()+"-", totals[ph], totals[phaseAlone])
		reportCost(b, ph.String()+"-notified-", notified[ph], notified[phaseAlone])
	}
	b.ReportMetric(0, "ns/op")
}

func reportSpread(b *testing.B, prefix string, d []time.Duration) {
	b.ReportMetric(ms(quantile(d, 0.5)), prefix+"p50-ms")
	b.ReportMetric(ms(meanDuration(d)), prefix+"mean-ms")
	b.ReportMetric(ms(quantile(d, 0.99)), prefix+"p99-ms")
}

// reportCost reports d's mean and p50 over base's, minus one, in percent.
func reportCost(b *testing.B, prefix string, d, base []time.Duration) {
	b.ReportMetric((float64(meanDuration(d))/float64(meanDuration(base))-1)*100, prefix+"cost-mean-%")
	b.ReportMetric((float64(quantile(d, 0.5))/float64(quantile(base, 0.5))-1)*100, prefix+"cost-p50-%")
}

func meanDuration(d []time.Duration) time.Duration {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(max(len(d), 1))
}
