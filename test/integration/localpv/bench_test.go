package localpv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeplug/nodeplug/cmd/local-volume-provisioner/app/options"
	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

const (
	benchNodes       = 1000
	benchVolsPerNode = 10
	// benchSimWorkers lets the simulator finish Jobs faster than the
	// master's discovery rate, so that it is never the bottleneck.
	benchSimWorkers = 4
	// benchTimeout bounds one run; the bound with the default rates is 4 min.
	benchTimeout = 20 * time.Minute

	targetRatio     = 1.2
	targetPeakRSSMB = 200
)

// BenchmarkMasterScale measures the master binary publishing 1,000 nodes of
// 10 filesystem volumes each against a real apiserver, with the client and
// discovery rates the binary defaults to. The simulator completes every
// discovery Job. It reports the time from starting the master's process to
// the last of the 10,000 PVs, the lower bound the rate limits allow, the
// API requests the master made per PV (counted by a proxy between it and
// the apiserver), and the master's peak RSS (VmHWM).
//
// Lower bound: each node costs the master at least one Job create, one PV
// create per volume and one Job delete. With client QPS q and burst u those
// W writes take at least (W-u)/q; discovery Jobs, at their own rate, take
// (nodes-burst)/qps. Both run at once, so the bound is the larger.
//
// Run it alone, it takes about five minutes:
//
//	go test -run '^$' -bench BenchmarkMasterScale -benchtime 1x -timeout 30m ./test/integration/localpv/
func BenchmarkMasterScale(b *testing.B) {
	o := options.NewMasterOptions()
	writes := benchNodes * (2 + benchVolsPerNode)
	clientBound := float64(writes-o.KubeAPIBurst) / float64(o.KubeAPIQPS)
	discoveryBound := float64(benchNodes-o.DiscoveryBurst) / o.DiscoveryQPS
	bound := max(clientBound, discoveryBound)
	say("bound: client %.0f s (%d writes beyond burst %d at %.0f QPS), discovery %.0f s (%d Jobs at %.0f/s, burst %d)",
		clientBound, writes, o.KubeAPIBurst, o.KubeAPIQPS, discoveryBound, benchNodes, o.DiscoveryQPS, o.DiscoveryBurst)

	var sum scaleResult
	for range b.N {
		r := runScale(b)
		sum.seconds += r.seconds
		sum.requestsPerPV += r.requestsPerPV
		sum.writesPerPV += r.writesPerPV
		sum.peakRSSMB += r.peakRSSMB
	}
	n := float64(b.N)
	secs, peak := sum.seconds/n, sum.peakRSSMB/n
	b.ReportMetric(secs, "s-to-all-PVs")
	b.ReportMetric(bound, "bound-s")
	b.ReportMetric(secs/bound, "ratio")
	b.ReportMetric(sum.requestsPerPV/n, "requests/PV")
	b.ReportMetric(sum.writesPerPV/n, "writes/PV")
	b.ReportMetric(peak, "peak-RSS-MB")
	say("time: %.1f s = %.2fx the bound (target <= %.1fx: %s); peak RSS %.1f MB (target <= %d MB: %s)",
		secs, secs/bound, targetRatio, met(secs/bound <= targetRatio), peak, targetPeakRSSMB, met(peak <= targetPeakRSSMB))
}

// say prints a line of the benchmark's report. The testing package keeps
// only the first ten lines of a benchmark's log, which the apiserver fills.
func say(format string, args ...interface{}) {
	fmt.Printf("BenchmarkMasterScale: "+format+"\n", args...)
}

func fatalf(tb testing.TB, format string, args ...interface{}) {
	tb.Helper()
	say("FAIL: "+format, args...)
	tb.FailNow()
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

type scaleResult struct {
	seconds, requestsPerPV, writesPerPV, peakRSSMB float64
}

// runScale runs one scale run. Only the master's run is timed.
func runScale(b *testing.B) scaleResult {
	b.StopTimer()
	e, sim := newMasterEnvWithSim(b, benchSimWorkers)
	var nodes []string
	want := map[string]bool{}
	for i := range benchNodes {
		node := fmt.Sprintf("node-%04d", i)
		vols := make([]string, benchVolsPerNode)
		for v := range vols {
			vols[v] = fmt.Sprintf("vol-%02d", v)
			want[pvName(node, vols[v])] = true
		}
		sim.setDisks(node, disks(node, vols...))
		nodes = append(nodes, node)
	}
	e.createNodes(b, nodes)
	tally := watchPVs(b, e, want)
	bin := buildProvisioner(b)
	counter := startRequestCounter(b, asMaster(e.cp.Config))

	start := time.Now()
	b.StartTimer()
	m := startMasterProcess(b, bin, counter.server.URL)
	tally.wait(b, m, counter, start)
	b.StopTimer()
	elapsed := tally.at.Sub(start)
	_, peak, err := procMemory(m.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	m.stop()

	total, counts, failed := counter.snapshot()
	say("first PV after %.1f s, all %d after %.1f s", tally.first.Sub(start).Seconds(), tally.total, elapsed.Seconds())
	say("master requests: %d: %s", total, format(counts))
	if len(failed) > 0 {
		say("failed requests: %s", format(failed))
	}
	pvs := float64(tally.total)
	return scaleResult{seconds: elapsed.Seconds(), requestsPerPV: float64(total) / pvs,
		writesPerPV: float64(writeCount(counts)) / pvs, peakRSSMB: float64(peak) / (1 << 20)}
}

func writeCount(counts map[string]int) int {
	n := 0
	for k, c := range counts {
		switch verb, _, _ := strings.Cut(k, " "); verb {
		case "create", "update", "patch", "delete", "deletecollection":
			n += c
		}
	}
	return n
}

// createNodes creates Nodes with their hostname labels, a few at a time.
func (e *env) createNodes(tb testing.TB, names []string) {
	tb.Helper()
	workqueue.ParallelizeUntil(tb.Context(), 8, len(names), func(i int) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: names[i], Labels: map[string]string{corev1.LabelHostname: names[i]}}}
		if _, err := e.cp.Client.CoreV1().Nodes().Create(tb.Context(), n, metav1.CreateOptions{}); err != nil {
			tb.Errorf("creating node %s: %v", names[i], err)
		}
	})
	if tb.Failed() {
		tb.FailNow()
	}
}

// pvTally watches the master's PVs and notes when the first and the last
// expected one appeared.
type pvTally struct {
	mu         sync.Mutex
	want       map[string]bool
	total      int
	unexpected []string
	first, at  time.Time
	done       chan struct{}
}

func watchPVs(tb testing.TB, e *env, want map[string]bool) *pvTally {
	tb.Helper()
	t := &pvTally{want: want, total: len(want), done: make(chan struct{})}
	factory := informers.NewSharedInformerFactoryWithOptions(e.cp.Client, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.LabelSelector = jobs.LabelManagedBy + "=" + jobs.ManagedByValue
	}))
	inf := factory.Core().V1().PersistentVolumes().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: t.add}); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(tb.Context()))
	factory.StartWithContext(ctx)
	tb.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	if !cache.WaitForNamedCacheSyncWithContext(tb.Context(), inf.HasSynced) {
		tb.Fatal("PV informer did not sync")
	}
	return t
}

func (t *pvTally) add(obj interface{}) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.want[pv.Name] {
		t.unexpected = append(t.unexpected, pv.Name)
		return
	}
	delete(t.want, pv.Name)
	if t.first.IsZero() {
		t.first = now
	}
	if len(t.want) == 0 {
		t.at = now
		close(t.done)
	}
}

func (t *pvTally) status() (seen int, unexpected []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total - len(t.want), append([]string(nil), t.unexpected...)
}

// wait waits for every expected PV, logging progress, and fails if the
// master exits, a PV nobody expected appears, or benchTimeout passes.
func (t *pvTally) wait(tb testing.TB, m *masterProcess, counter *requestCounter, start time.Time) {
	tb.Helper()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	timeout := time.After(benchTimeout)
	for {
		select {
		case <-t.done:
			if _, unexpected := t.status(); len(unexpected) > 0 {
				fatalf(tb, "unexpected PVs: %v", unexpected)
			}
			return
		case <-m.exited:
			fatalf(tb, "master exited: %v\n%s", m.err, m.logTail())
		case <-timeout:
			seen, _ := t.status()
			fatalf(tb, "only %d of %d PVs after %s\n%s", seen, t.total, benchTimeout, m.logTail())
		case <-tick.C:
			seen, _ := t.status()
			total, _, _ := counter.snapshot()
			rss, _, _ := procMemory(m.cmd.Process.Pid)
			say("%3.0f s: %5d/%d PVs, %6d requests, RSS %.0f MB", time.Since(start).Seconds(), seen, t.total, total, float64(rss)/(1<<20))
		}
	}
}

// buildProvisioner builds cmd/local-volume-provisioner into a temporary
// directory.
func buildProvisioner(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "local-volume-provisioner")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/nodeplug/nodeplug/cmd/local-volume-provisioner").CombinedOutput()
	if err != nil {
		tb.Fatalf("building local-volume-provisioner: %v\n%s", err, out)
	}
	return bin
}

// masterProcess is the master binary running as a child process.
type masterProcess struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error
	stop   func()
}

// startMasterProcess runs "local-volume-provisioner master" against server
// with the flags of deploy/local-volume-provisioner/master.yaml and the
// default rates. It is stopped when tb ends.
func startMasterProcess(tb testing.TB, bin, server string) *masterProcess {
	tb.Helper()
	dir := tb.TempDir()
	kubeconfig, configDir := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "config")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["apiserver"] = &clientcmdapi.Cluster{Server: server}
	kc.AuthInfos["master"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["master"] = &clientcmdapi.Context{Cluster: "apiserver", AuthInfo: "master"}
	kc.CurrentContext = "master"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		tb.Fatal(err)
	}
	if err := os.Mkdir(configDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(configDir, config.KeyStorageClassMap), []byte(classMap), 0o644); err != nil {
		tb.Fatal(err)
	}
	m := &masterProcess{log: filepath.Join(dir, "master.log"), exited: make(chan struct{})}
	logFile, err := os.Create(m.log)
	if err != nil {
		tb.Fatal(err)
	}
	m.cmd = exec.Command(bin, "master", "--kubeconfig="+kubeconfig, "--config-dir="+configDir, "--namespace="+namespace,
		"--job-image=nodeplug/local-volume-provisioner:dev", "--job-image-pull-policy=IfNotPresent",
		"--leader-elect=true", "--metrics-address=127.0.0.1:0", "--v=2")
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	if err := m.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		m.err = m.cmd.Wait()
		_ = logFile.Close()
		close(m.exited)
	}()
	m.stop = sync.OnceFunc(func() {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.exited:
		case <-time.After(10 * time.Second):
			_ = m.cmd.Process.Kill()
			<-m.exited
		}
	})
	tb.Cleanup(m.stop)
	return m
}

// logTail returns the end of the master's log.
func (m *masterProcess) logTail() string {
	b, err := os.ReadFile(m.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}
