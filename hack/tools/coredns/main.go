// Command coredns is the local cluster's DNS server: CoreDNS (pinned by
// this module's go.mod, served by the Go module proxy) with only the
// plugins a kubeadm or kind Corefile uses compiled in. CoreDNS's own main
// imports every plugin it ships, and with them the AWS, Azure and Google
// Cloud SDKs some of them need; CoreDNS documents this other way, a main
// of one's own that imports the chosen plugins, sets the server's
// directive list and runs coremain
// (https://coredns.io/2017/07/25/compile-time-enabling-or-disabling-plugins/).
//
// It takes CoreDNS's flags (-conf FILE, -plugins, -version, ...). The
// manifests are in deploy/coredns, the image's recipe in build/coredns;
// hack/lib/build.sh builds it (np::build::coredns).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// The plugins, each registering its directive's setup with caddy.
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// directives are the compiled-in plugins' directives in the order in
// which a query passes through them. The order is CoreDNS's own (its
// plugin.cfg, which generates the full dnsserver.Directives), with the
// plugins this build leaves out removed: a Corefile lists directives in
// any order, and the server chains them in this one.
// TestDirectivesFollowCoreDNSOrder checks it against the full list.
var directives = []string{
	"reload",
	"ready",
	"health",
	"prometheus", // the metrics package
	"errors",
	"log",
	"loadbalance",
	"cache",
	"kubernetes",
	"loop",
	"forward",
}

// coreDNSDirectives is CoreDNS's full list, kept (before init replaces
// it) for the test.
var coreDNSDirectives = dnsserver.Directives

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
