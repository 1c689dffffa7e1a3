package reconciler

import (
	"errors"
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/executor/executortest"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
)

// TestReconcilerReplacement: a newer socket of a registered plugin is
// validated (ValidateReplacement if the handler has it, else
// ValidatePlugin) while the old one stays registered; a refusal leaves the
// old one registered on every retry. A new socket that fails after
// displacing the old one hands the registration back and backs off.
func TestReconcilerReplacement(t *testing.T) {
	runReconcilerCases(t, replacementCases)
}

// ownerEta1 registers eta.1, the socket the cases below try to replace.
var ownerEta1 = step{
	do:         []action{create(sock{"eta.1", 1})},
	want:       []string{"validate eta.1", "register eta.1", "status eta.1 ok"},
	registered: []string{"eta.1"},
}

var replacementCases = []reconcilerCase{{
	name: "without ReplacementValidator, ValidatePlugin judges; a refusal leaves the old socket registered on every retry",
	steps: []step{ownerEta1, {
		do:         []action{handlerFails("validate eta.2", always), create(sock{"eta.2", 2})},
		want:       []string{"validate eta.2", "status eta.2 failed", "retry eta.2 10ms"},
		registered: []string{"eta.1"},
	}, {
		wait: 30 * time.Millisecond,
		want: []string{
			"validate eta.2", "status eta.2 failed", "retry eta.2 20ms",
			"validate eta.2", "status eta.2 failed", "retry eta.2 40ms",
		},
		registered: []string{"eta.1"},
	}},
}, {
	name:     "with ReplacementValidator, ValidateReplacement judges; a refusal leaves the old socket registered on every retry",
	replacer: true,
	steps: []step{ownerEta1, {
		do:         []action{handlerFails("validateReplacement eta.2", always), create(sock{"eta.2", 2})},
		want:       []string{"validateReplacement eta.2", "status eta.2 failed", "retry eta.2 10ms"},
		registered: []string{"eta.1"},
	}, {
		wait:       10 * time.Millisecond,
		want:       []string{"validateReplacement eta.2", "status eta.2 failed", "retry eta.2 20ms"},
		registered: []string{"eta.1"},
	}},
}, {
	name:             "ReplacementValidator lets a duplicate-refusing handler replace a live owner",
	refuseDuplicates: true, replacer: true,
	steps: []step{ownerEta1, {
		do:         []action{create(sock{"eta.2", 2})},
		want:       []string{"validateReplacement eta.2", "deregister eta.1", "validate eta.2", "register eta.2", "status eta.2 ok"},
		registered: []string{"eta.2"},
	}},
}, {
	name:             "a duplicate-refusing handler without ReplacementValidator: the newer socket registers once the old one goes",
	refuseDuplicates: true,
	steps: []step{ownerEta1, {
		do:         []action{create(sock{"eta.2", 2})},
		want:       []string{"validate eta.2", "status eta.2 failed", "retry eta.2 10ms"},
		registered: []string{"eta.1"},
	}, {
		do:         []action{remove("eta.1")},
		wait:       10 * time.Millisecond,
		want:       []string{"deregister eta.1", "validate eta.2", "register eta.2", "status eta.2 ok"},
		registered: []string{"eta.2"},
	}},
}, {
	name: "RegisterPlugin fails after displacing the old socket: the old one registers again, the new one backs off to RetryMax",
	opts: Config{RetryMax: 40 * time.Millisecond},
	steps: []step{ownerEta1, {
		do: []action{handlerFails("register eta.2", always), create(sock{"eta.2", 2})},
		want: []string{
			"validate eta.2", "deregister eta.1", "validate eta.2", "register eta.2", "status eta.2 failed", "retry eta.2 10ms",
			"validate eta.1", "register eta.1", "status eta.1 ok",
		},
		registered: []string{"eta.1"},
	}, {
		wait: 10 * time.Millisecond,
		want: []string{
			"validate eta.2", "deregister eta.1", "validate eta.2", "register eta.2", "status eta.2 failed", "retry eta.2 20ms",
			"validate eta.1", "register eta.1", "status eta.1 ok",
		},
		registered: []string{"eta.1"},
	}, {
		wait:       200 * time.Millisecond,
		only:       "retry",
		want:       []string{"retry eta.2 40ms", "retry eta.2 40ms", "retry eta.2 40ms", "retry eta.2 40ms", "retry eta.2 40ms"},
		registered: []string{"eta.1"},
	}},
}, {
	name:     "ValidatePlugin fails after ValidateReplacement passed: the old socket registers again",
	replacer: true,
	steps: []step{ownerEta1, {
		do: []action{handlerFails("validate eta.2", 1), create(sock{"eta.2", 2})},
		want: []string{
			"validateReplacement eta.2", "deregister eta.1", "validate eta.2", "status eta.2 failed", "retry eta.2 10ms",
			"validate eta.1", "register eta.1", "status eta.1 ok",
		},
		registered: []string{"eta.1"},
	}, {
		wait:       10 * time.Millisecond,
		want:       []string{"validateReplacement eta.2", "deregister eta.1", "validate eta.2", "register eta.2", "status eta.2 ok"},
		registered: []string{"eta.2"},
	}},
}}

// TestReconcilerBackoff: failures back off per socket, exponentially from
// RetryBase to RetryMax, and a success resets the backoff; a failed
// notification keeps the registration and only the notification is
// retried; an identity-policy refusal is final for that socket file.
func TestReconcilerBackoff(t *testing.T) {
	runReconcilerCases(t, backoffCases)
}

var backoffCases = []reconcilerCase{{
	name: "per socket, from RetryBase doubling to RetryMax",
	opts: Config{RetryBase: 10 * time.Millisecond, RetryMax: 80 * time.Millisecond},
	steps: []step{{
		do:   []action{handlerFails("register eta.1", always), create(sock{"eta.1", 1})},
		wait: 300 * time.Millisecond,
		only: "retry",
		want: []string{
			"retry eta.1 10ms", "retry eta.1 20ms", "retry eta.1 40ms",
			"retry eta.1 80ms", "retry eta.1 80ms", "retry eta.1 80ms",
		},
	}, {
		do:   []action{handlerFails("register zeta.1", always), create(sock{"zeta.1", 1})},
		only: "retry zeta.1",
		want: []string{"retry zeta.1 10ms"},
	}},
}, {
	name: "a success resets the backoff",
	steps: []step{{
		do:         []action{handlerFails("register eta.1", 3), create(sock{"eta.1", 1})},
		wait:       time.Second,
		only:       "retry",
		want:       []string{"retry eta.1 10ms", "retry eta.1 20ms", "retry eta.1 40ms"},
		registered: []string{"eta.1"},
	}, {
		do:         []action{probeFails("eta.1", errors.New("connection closed"), 1), drop("eta.1")},
		wait:       time.Second,
		want:       []string{"retry eta.1 10ms"},
		registered: []string{"eta.1"},
	}},
}, {
	name: "a failed notification keeps the registration; only the notification is retried",
	steps: []step{{
		do:         []action{create(sock{"eta.1", 1}), notifyFails("eta.1", 2)},
		want:       []string{"validate eta.1", "register eta.1", "status eta.1 ok (not delivered)", "retry eta.1 10ms"},
		registered: []string{"eta.1"},
	}, {
		wait:       time.Second,
		want:       []string{"status eta.1 ok (not delivered)", "retry eta.1 20ms", "status eta.1 ok"},
		registered: []string{"eta.1"},
	}},
}, {
	name: "an identity-policy refusal is final for that socket file",
	opts: Config{IdentityPolicy: socket.IdentityReject},
	steps: []step{{
		do:   []action{create(sock{"pi.1", 1}), plugin("pi.1", func(p *executortest.FakePlugin) { p.Info.Name = "rho" })},
		want: []string{"status pi.1 failed"},
	}, {
		do:   []action{touch("pi.1")},
		wait: 10 * time.Minute,
	}, {
		do:   []action{create(sock{"pi.1", 2}), plugin("pi.1", func(p *executortest.FakePlugin) { p.Info.Name = "rho" })},
		want: []string{"status pi.1 failed"},
	}, {
		do:         []action{create(sock{"pi.1", 3})}, // a new file, now with the plugin's name
		want:       []string{"validate pi.1", "register pi.1", "status pi.1 ok"},
		registered: []string{"pi.1"},
	}},
}, {
	name: "a plugin type without a handler is retried until one is added",
	steps: []step{{
		do:   []action{create(sock{"eta.1", 1}), plugin("eta.1", func(p *executortest.FakePlugin) { p.Info.Type = "OtherPlugin" })},
		want: []string{"status eta.1 failed", "retry eta.1 10ms"},
	}, {
		do:         []action{func(tb *testbed) { tb.handlers["OtherPlugin"] = tb.h }},
		wait:       10 * time.Millisecond,
		want:       []string{"validate eta.1", "register eta.1", "status eta.1 ok"},
		registered: []string{"eta.1"},
	}},
}}
