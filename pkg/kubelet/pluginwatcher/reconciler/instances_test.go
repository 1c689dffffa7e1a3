package reconciler

import (
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/executor/executortest"
)

// allInstances is the policy of upstream's DRA manager and, since v1.37,
// its device manager: every live socket of a plugin is registered.
var allInstances = cache.Policy{AllInstances: true}

// draPolicy adds what upstream's DRA manager needs on top: a registered
// socket that refuses connections stays registered.
var draPolicy = cache.Policy{AllInstances: true, KeepRegisteredWhenRefused: true}

// TestReconcilerAllInstances: with Policy.AllInstances every live socket of
// a plugin is registered beside the others (a rolling update with maxSurge,
// kubernetes#129832 and #135437), each is de-registered only when its own
// socket goes, and two sockets never hold one endpoint at once.
func TestReconcilerAllInstances(t *testing.T) {
	runReconcilerCases(t, allInstancesCases)
}

var allInstancesCases = []reconcilerCase{{
	name:   "rolling update: the new instance registers beside the old one, which stays registered until its socket goes",
	policy: allInstances,
	steps: []step{{
		do:         []action{create(sock{"eta.1", 1})},
		want:       []string{"validate eta.1", "register eta.1", "status eta.1 ok"},
		registered: []string{"eta.1"},
	}, {
		do:         []action{create(sock{"eta.2", 2})},
		want:       []string{"validate eta.2", "register eta.2", "status eta.2 ok"},
		registered: []string{"eta.1", "eta.2"},
	}, {
		do:         []action{remove("eta.1")},
		want:       []string{"deregister eta.1"},
		registered: []string{"eta.2"},
	}},
}, {
	name:   "the newest instance goes: only its endpoint is de-registered, the older one is not registered again",
	policy: allInstances,
	steps: []step{{
		do:         []action{create(sock{"eta.1", 1}), create(sock{"eta.2", 2})},
		want:       []string{"validate eta.1", "register eta.1", "status eta.1 ok", "validate eta.2", "register eta.2", "status eta.2 ok"},
		registered: []string{"eta.1", "eta.2"},
	}, {
		do:         []action{remove("eta.2")},
		want:       []string{"deregister eta.2"},
		registered: []string{"eta.1"},
	}},
}, {
	name:   "instances found together (kubelet restart) are all registered, in the order their attempts run",
	policy: allInstances,
	steps: []step{{
		do: []action{create(sock{"eta.2", 2}, sock{"eta.1", 1}, sock{"eta.3", 3})},
		want: []string{
			"validate eta.2", "register eta.2", "status eta.2 ok",
			"validate eta.1", "register eta.1", "status eta.1 ok",
			"validate eta.3", "register eta.3", "status eta.3 ok",
		},
		registered: []string{"eta.1", "eta.2", "eta.3"},
	}},
}, {
	name:   "a new instance the handler refuses is retried; the registered one is untouched",
	policy: allInstances,
	steps: []step{ownerEta1, {
		do:         []action{handlerFails("register eta.2", 1), create(sock{"eta.2", 2})},
		want:       []string{"validate eta.2", "register eta.2", "status eta.2 failed", "retry eta.2 10ms"},
		registered: []string{"eta.1"},
	}, {
		wait:       10 * time.Millisecond,
		want:       []string{"validate eta.2", "register eta.2", "status eta.2 ok"},
		registered: []string{"eta.1", "eta.2"},
	}},
}, {
	name:   "two sockets claim one endpoint: the later one is refused until the first goes",
	policy: allInstances,
	steps: []step{{
		do:         []action{create(sock{"eta.1", 1}), endpoint("eta.1", "svc")},
		want:       []string{"validate svc", "register svc", "status eta.1 ok"},
		registered: []string{"svc"},
	}, {
		do:         []action{create(sock{"eta.2", 2}), endpoint("eta.2", "svc"), touch("eta.2")},
		want:       []string{"status eta.2 failed", "retry eta.2 10ms"},
		registered: []string{"svc"},
	}, {
		do:         []action{remove("eta.1")},
		wait:       10 * time.Millisecond,
		want:       []string{"deregister svc", "validate svc", "register svc", "status eta.2 ok"},
		registered: []string{"svc"},
	}},
}, {
	name:   "an instance restarted in place (same path, new inode) is de-registered, then registered again",
	policy: allInstances,
	steps: []step{ownerEta1, {
		do:         []action{create(sock{"eta.2", 2}), create(sock{"eta.1", 3})},
		want:       []string{"validate eta.2", "register eta.2", "status eta.2 ok", "deregister eta.1", "validate eta.1", "register eta.1", "status eta.1 ok"},
		registered: []string{"eta.1", "eta.2"},
	}},
}}

// TestReconcilerKeepRegisteredWhenRefused: with
// Policy.KeepRegisteredWhenRefused a registered socket that refuses
// connections is neither removed nor de-registered (upstream's DRA manager
// decides, from its own connection to the plugin's service, when the
// driver's ResourceSlices go); it is retried with backoff and de-registered
// when its file goes. A socket never registered is still removed as stale.
func TestReconcilerKeepRegisteredWhenRefused(t *testing.T) {
	runReconcilerCases(t, keepRegisteredCases)
}

var keepRegisteredCases = []reconcilerCase{{
	name:   "default policy, for contrast: a registered socket that refuses 5 times over 1s is removed and de-registered",
	policy: allInstances,
	steps: []step{ownerEta1, {
		do:         []action{probeFails("eta.1", errTestRefused, always), drop("eta.1")},
		wait:       time.Second,
		only:       "r", // retries, removal
		want:       []string{"retry eta.1 1ms", "retry eta.1 10ms", "retry eta.1 20ms", "retry eta.1 40ms", "retry eta.1 929ms", "remove eta.1"},
		registered: nil,
	}},
}, {
	name:   "a registered socket that refuses stays registered and in place, retried up to RetryMax, until its file goes",
	policy: draPolicy,
	opts:   Config{RetryMax: 100 * time.Millisecond},
	steps: []step{ownerEta1, {
		do:   []action{probeFails("eta.1", errTestRefused, always), drop("eta.1")},
		wait: time.Minute,
		only: "r",
		want: append([]string{"retry eta.1 10ms", "retry eta.1 20ms", "retry eta.1 40ms", "retry eta.1 80ms"},
			repeat("retry eta.1 100ms", 599)...),
		registered: []string{"eta.1"},
	}, {
		do:   []action{remove("eta.1")},
		want: []string{"deregister eta.1"},
	}},
}, {
	name:   "a registered socket that refuses, then answers again, stays registered without a new registration",
	policy: draPolicy,
	steps: []step{ownerEta1, {
		do:         []action{probeFails("eta.1", errTestRefused, 3), drop("eta.1")},
		wait:       time.Second,
		want:       []string{"retry eta.1 10ms", "retry eta.1 20ms", "retry eta.1 40ms"},
		registered: []string{"eta.1"},
	}},
}, {
	name:   "a socket never registered that refuses is removed as stale",
	policy: draPolicy,
	steps: []step{{
		do:         []action{create(sock{"eta.1", 1}), probeFails("eta.1", errTestRefused, always)},
		wait:       time.Second,
		only:       "remove",
		want:       []string{"remove eta.1"},
		registered: nil,
	}},
}}

// endpoint makes label's plugin claim the endpoint socket ep instead of
// its registration socket.
func endpoint(label, ep string) action {
	return plugin(label, func(p *executortest.FakePlugin) { p.Info.Endpoint = socketPath(ep) })
}

func repeat(line string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = line
	}
	return out
}
