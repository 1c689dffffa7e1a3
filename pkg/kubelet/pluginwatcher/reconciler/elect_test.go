package reconciler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/executor"
)

var (
	errTestRefused = fmt.Errorf("dial: %w", executor.ErrRefused)
	errTestTimeout = fmt.Errorf("GetInfo: %w", context.DeadlineExceeded)
)

// TestReconcilerOwnerElection: per plugin (type, name) the newest live
// socket (by change time, then discovery order) is registered; older ones
// are standbys that get no status; when the owner goes or backs off, the
// newest other live socket stands in. The reconciler runs synchronously on
// a testbed: fake sockets, fake plugins, a fake clock.
func TestReconcilerOwnerElection(t *testing.T) {
	runReconcilerCases(t, electionCases)
}

var electionCases = []reconcilerCase{{
	name: "newest by change time wins; an older socket found later is a standby without status",
	steps: []step{{
		do:         []action{create(sock{"eta.2", 2}, sock{"eta.1", 1})},
		want:       []string{"validate eta.2", "register eta.2", "status eta.2 ok"},
		registered: []string{"eta.2"},
	}, {
		do:         []action{touch("eta.1")}, // probed again: still no status
		registered: []string{"eta.2"},
	}},
}, {
	name: "a newer socket takes over: the old endpoint is de-registered, the new one registered",
	steps: []step{{
		do:         []action{create(sock{"eta.1", 1})},
		want:       []string{"validate eta.1", "register eta.1", "status eta.1 ok"},
		registered: []string{"eta.1"},
	}, {
		do:         []action{create(sock{"eta.2", 2})},
		want:       []string{"validate eta.2", "deregister eta.1", "validate eta.2", "register eta.2", "status eta.2 ok"},
		registered: []string{"eta.2"},
	}},
}, {
	name: "equal change times: the socket discovered later wins, even when probed last",
	steps: []step{{
		do:         []action{create(sock{"eta.b", 5}, sock{"eta.a", 5}), probeFails("eta.b", errTestRefused, 1)},
		wait:       time.Second,
		want:       []string{"retry eta.b 1ms", "validate eta.a", "register eta.a", "status eta.a ok"},
		registered: []string{"eta.a"},
	}},
}, {
	name: "the owner leaves: the next newest takes over, then the next",
	steps: []step{{
		do:         []action{create(sock{"eta.3", 3}, sock{"eta.2", 2}, sock{"eta.1", 1})},
		want:       []string{"validate eta.3", "register eta.3", "status eta.3 ok"},
		registered: []string{"eta.3"},
	}, {
		do:         []action{remove("eta.3")},
		want:       []string{"deregister eta.3", "validate eta.2", "register eta.2", "status eta.2 ok"},
		registered: []string{"eta.2"},
	}, {
		do:         []action{remove("eta.2")},
		want:       []string{"deregister eta.2", "validate eta.1", "register eta.1", "status eta.1 ok"},
		registered: []string{"eta.1"},
	}, {
		do:   []action{remove("eta.1")},
		want: []string{"deregister eta.1"},
	}},
}, {
	name: "removing standby sockets never touches the registration",
	steps: []step{{
		do:         []action{create(sock{"eta.3", 3}, sock{"eta.2", 2}, sock{"eta.1", 1})},
		want:       []string{"validate eta.3", "register eta.3", "status eta.3 ok"},
		registered: []string{"eta.3"},
	}, {
		do:         []action{remove("eta.1", "eta.2")},
		wait:       time.Minute,
		registered: []string{"eta.3"},
	}},
}, {
	name: "the newest backs off after a failure: the newest other live socket stands in until its retry",
	steps: []step{{
		do: []action{
			handlerFails("register eta.3", 1),
			create(sock{"eta.3", 3}, sock{"eta.2", 2}, sock{"eta.1", 1}),
		},
		want: []string{
			"validate eta.3", "register eta.3", "status eta.3 failed", "retry eta.3 10ms",
			"validate eta.2", "register eta.2", "status eta.2 ok",
		},
		registered: []string{"eta.2"},
	}, {
		wait:       10 * time.Millisecond,
		want:       []string{"validate eta.3", "deregister eta.2", "validate eta.3", "register eta.3", "status eta.3 ok"},
		registered: []string{"eta.3"},
	}},
}, {
	name: "the owner leaves and the next newest does not answer: the next live socket stands in",
	steps: []step{{
		do:         []action{create(sock{"eta.3", 3}, sock{"eta.2", 2}, sock{"eta.1", 1})},
		want:       []string{"validate eta.3", "register eta.3", "status eta.3 ok"},
		registered: []string{"eta.3"},
	}, {
		do: []action{probeFails("eta.2", errTestTimeout, always), remove("eta.3")},
		want: []string{
			"deregister eta.3", "retry eta.2 10ms",
			"validate eta.1", "register eta.1", "status eta.1 ok",
		},
		registered: []string{"eta.1"},
	}, {
		do:         []action{probeFails("eta.2", nil, 0)},
		wait:       10 * time.Millisecond,
		want:       []string{"validate eta.2", "deregister eta.1", "validate eta.2", "register eta.2", "status eta.2 ok"},
		registered: []string{"eta.2"},
	}},
}, {
	name: "the owner leaves and the next newest has died: the next live socket stands in, the dead one is removed",
	steps: []step{{
		do:         []action{create(sock{"eta.3", 3}, sock{"eta.2", 2}, sock{"eta.1", 1})},
		want:       []string{"validate eta.3", "register eta.3", "status eta.3 ok"},
		registered: []string{"eta.3"},
	}, {
		// A first refusal is the bind-to-listen window: no stand-in yet.
		do:   []action{probeFails("eta.2", errTestRefused, always), remove("eta.3")},
		want: []string{"deregister eta.3", "retry eta.2 1ms"},
	}, {
		wait: 2 * time.Second,
		want: []string{
			"retry eta.2 10ms", "validate eta.1", "register eta.1", "status eta.1 ok",
			"retry eta.2 20ms", "retry eta.2 40ms", "retry eta.2 929ms", "remove eta.2",
		},
		registered: []string{"eta.1"},
	}},
}}

// TestReconcilerRetirement: de-registration is keyed by plugin name and
// socket path, and DeRegisterPlugin is only called for the registered
// endpoint (scriptedHandler fails the test otherwise).
func TestReconcilerRetirement(t *testing.T) {
	runReconcilerCases(t, retirementCases)
}

var retirementCases = []reconcilerCase{{
	name: "removing the registered socket de-registers its endpoint",
	steps: []step{{
		do:         []action{create(sock{"eta.1", 1})},
		want:       []string{"validate eta.1", "register eta.1", "status eta.1 ok"},
		registered: []string{"eta.1"},
	}, {
		do:   []action{remove("eta.1")},
		want: []string{"deregister eta.1"},
	}},
}, {
	name: "plugins are keyed by name: removing one leaves the other registered",
	steps: []step{{
		do: []action{create(sock{"eta.1", 1}, sock{"zeta.1", 1})},
		want: []string{
			"validate eta.1", "register eta.1", "status eta.1 ok",
			"validate zeta.1", "register zeta.1", "status zeta.1 ok",
		},
		registered: []string{"eta.1", "zeta.1"},
	}, {
		do:         []action{remove("zeta.1")},
		want:       []string{"deregister zeta.1"},
		registered: []string{"eta.1"},
	}},
}, {
	name: "a socket replaced in place: the old generation is de-registered first",
	steps: []step{{
		do:         []action{create(sock{"eta.1", 1})},
		want:       []string{"validate eta.1", "register eta.1", "status eta.1 ok"},
		registered: []string{"eta.1"},
	}, {
		do:         []action{create(sock{"eta.1", 2})},
		want:       []string{"deregister eta.1", "validate eta.1", "register eta.1", "status eta.1 ok"},
		registered: []string{"eta.1"},
	}},
}, {
	name: "a socket that never registered leaves without DeRegisterPlugin and is not retried",
	steps: []step{{
		do:   []action{handlerFails("validate eta.1", always), create(sock{"eta.1", 1})},
		want: []string{"validate eta.1", "status eta.1 failed", "retry eta.1 10ms"},
	}, {
		do:   []action{remove("eta.1")},
		wait: time.Minute,
	}},
}, {
	name: "a displaced owner leaves without DeRegisterPlugin",
	steps: []step{{
		do: []action{create(sock{"eta.1", 1}, sock{"eta.2", 2})},
		want: []string{
			"validate eta.1", "register eta.1", "status eta.1 ok",
			"validate eta.2", "deregister eta.1", "validate eta.2", "register eta.2", "status eta.2 ok",
		},
		registered: []string{"eta.2"},
	}, {
		do:         []action{remove("eta.1")},
		registered: []string{"eta.2"},
	}},
}, {
	name: "a registered plugin dies: its socket file is removed and the next live socket takes over",
	steps: []step{{
		do:         []action{create(sock{"eta.2", 2}, sock{"eta.1", 1})},
		want:       []string{"validate eta.2", "register eta.2", "status eta.2 ok"},
		registered: []string{"eta.2"},
	}, {
		// It stays registered while it refuses, until StaleAttempts (5)
		// refusals over StaleGrace (1s).
		do:   []action{probeFails("eta.2", errTestRefused, always), drop("eta.2")},
		wait: 999 * time.Millisecond,
		want: []string{
			"retry eta.2 1ms", "retry eta.2 10ms", "retry eta.2 20ms", "retry eta.2 40ms", "retry eta.2 929ms",
		},
		registered: []string{"eta.2"},
	}, {
		wait: time.Millisecond,
		want: []string{
			"remove eta.2", "deregister eta.2",
			"validate eta.1", "register eta.1", "status eta.1 ok",
		},
		registered: []string{"eta.1"},
	}},
}, {
	name: "a registered plugin that answers slowly after a drop stays registered",
	steps: []step{{
		do:         []action{create(sock{"eta.1", 1})},
		want:       []string{"validate eta.1", "register eta.1", "status eta.1 ok"},
		registered: []string{"eta.1"},
	}, {
		do:         []action{probeFails("eta.1", errTestTimeout, 2), drop("eta.1")},
		wait:       time.Minute,
		want:       []string{"retry eta.1 10ms", "retry eta.1 20ms"},
		registered: []string{"eta.1"},
	}},
}, {
	name: "the plugin's key is busy: the departing owner is retired once it is free",
	steps: []step{{
		do:         []action{create(sock{"eta.1", 1})},
		want:       []string{"validate eta.1", "register eta.1", "status eta.1 ok"},
		registered: []string{"eta.1"},
	}, {
		do:         []action{holdKey("eta"), remove("eta.1")},
		registered: []string{"eta.1"},
	}, {
		do:   []action{releaseKey("eta")},
		want: []string{"deregister eta.1"},
	}},
}}
