package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"
)

// corefile is the local cluster's Corefile (deploy/coredns).
const corefile = "../../../deploy/coredns/Corefile"

// TestDirectivesFollowCoreDNSOrder: the directives are CoreDNS's, in
// CoreDNS's order, each once. A plugin out of order would see queries
// before or after the plugins it must not care about (a cache above
// kubernetes, say, is where CoreDNS puts it; below, it would cache nothing).
func TestDirectivesFollowCoreDNSOrder(t *testing.T) {
	last := -1
	for _, d := range directives {
		i := slices.Index(coreDNSDirectives, d)
		switch {
		case i < 0:
			t.Errorf("directive %q is not one of CoreDNS's", d)
		case i <= last:
			t.Errorf("directive %q comes after %q in CoreDNS's order, not before", d, coreDNSDirectives[last])
		default:
			last = i
		}
	}
}

// transitive are the plugins the chosen ones import (forward imports
// dnstap and debug, kubernetes transfer and metadata): they register
// themselves, but a Corefile cannot use them, as they are no directives.
var transitive = []string{"debug", "dnstap", "metadata", "transfer"}

// TestEveryDirectiveHasItsPlugin: every directive has its plugin compiled
// in (else a Corefile that uses it fails with "no action found"), and no
// other plugin is compiled in than the directives' and the ones they
// import (a new release that pulls in more, say a cloud SDK, shows here).
func TestEveryDirectiveHasItsPlugin(t *testing.T) {
	var plugins []string
	for _, p := range caddy.ListPlugins()["others"] {
		if name, ok := strings.CutPrefix(p, "dns."); ok {
			plugins = append(plugins, name)
		}
	}
	for _, d := range directives {
		if !slices.Contains(plugins, d) {
			t.Errorf("directive %q has no plugin compiled in", d)
		}
	}
	for _, p := range plugins {
		if !slices.Contains(directives, p) && !slices.Contains(transitive, p) {
			t.Errorf("plugin %q is compiled in, but it is neither a directive nor one the directives' plugins import", p)
		}
	}
}

// TestCorefileUsesCompiledDirectives: the local cluster's Corefile parses,
// and names only directives this build has.
func TestCorefileUsesCompiledDirectives(t *testing.T) {
	f, err := os.Open(corefile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blocks, err := caddyfile.Parse(corefile, f, directives)
	if err != nil {
		t.Fatalf("%s does not parse with this build's directives: %v", corefile, err)
	}
	if len(blocks) == 0 {
		t.Fatalf("%s has no server block", corefile)
	}
	for _, b := range blocks {
		if len(b.Tokens) == 0 {
			t.Errorf("server block %v has no directives", b.Keys)
		}
	}
}
