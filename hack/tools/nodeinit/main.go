// Command nodeinit is PID 1 of a node of the multi-node local cluster
// (hack/lib/nodes.sh starts it under `unshare --pid --fork`). It sets the
// node's host name (its UTS namespace is new), then does what an init does
// and nothing else: it reaps every process that ends in the node's PID
// namespace, and on SIGTERM or SIGINT it stops them all (SIGTERM, then
// SIGKILL after -grace) and exits. The node's processes (containerd, kubelet,
// kube-proxy) are started into its namespaces with nsenter; a privileged
// pod's `nsenter --mount=/rootfs/proc/1/ns/mnt` enters the node through this
// process.
//
//	nodeinit -hostname nodeplug-node-1 -grace 5s -tag /path/to/cluster/nodes/nodeplug-node-1
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	hostname := flag.String("hostname", "", "host name of the node (its UTS namespace)")
	grace := flag.Duration("grace", 5*time.Second, "how long the node's processes get between SIGTERM and SIGKILL")
	// -tag only names the node on the command line, so that the scripts
	// can tell this process from any other (its value is not used).
	flag.String("tag", "", "any text, e.g. the node's directory")
	flag.Parse()
	if os.Getpid() != 1 {
		fail(errors.New("must run as PID 1 of a new PID namespace (unshare --pid --fork)"))
	}
	if *hostname != "" {
		if err := unix.Sethostname([]byte(*hostname)); err != nil {
			fail(fmt.Errorf("set the host name to %q: %w", *hostname, err))
		}
	}
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, unix.SIGCHLD, unix.SIGTERM, unix.SIGINT)
	for sig := range signals {
		reap()
		if sig == unix.SIGTERM || sig == unix.SIGINT {
			stopAll(*grace)
			return
		}
	}
}

// reap collects every child that has ended, and reports whether any child
// is still running. As PID 1 of the namespace, every orphan in it is this
// process's child, so no child means the namespace is empty.
func reap() (running bool) {
	for {
		var status unix.WaitStatus
		pid, err := unix.Wait4(-1, &status, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil: // ECHILD: no child at all
			return false
		case pid == 0:
			return true
		}
	}
}

// stopAll signals every other process of the namespace (kill(-1) from PID
// 1) with SIGTERM, waits until they are gone or grace has passed, then
// kills what is left.
func stopAll(grace time.Duration) {
	_ = unix.Kill(-1, unix.SIGTERM)
	deadline := time.Now().Add(grace)
	for reap() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; reap() && i < 100; i++ {
		_ = unix.Kill(-1, unix.SIGKILL)
		time.Sleep(50 * time.Millisecond)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "nodeinit: %v\n", err)
	os.Exit(1)
}
