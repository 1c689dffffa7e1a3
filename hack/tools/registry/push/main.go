// Command push copies an image archive into a registry: a docker-archive
// of one image (what hack/tools/mkimage and `docker save` write) as an
// image, or an OCI image layout archive of one image index (what
// `mkimage index` and make release write) as that index, with every
// platform's manifest. It trusts the registry by the CA given (or the
// system's roots), and always speaks TLS, also to localhost.
//
//	push [-ca ca.crt] [-registry localhost:5000] ARCHIVE [REFERENCE]
//
// REFERENCE (registry/repository:tag) names the target; without it the
// archive's own image name is kept with its registry replaced by
// -registry (docker.io/library/foo:1 becomes localhost:5000/library/foo:1).
// It prints the reference pushed, with the digest.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.ca, "ca", "", "CA certificate (PEM) the registry's serving certificate is signed by (default: the system's roots)")
	flag.StringVar(&o.registry, "registry", "", "registry host:port that replaces the archive's own registry when no REFERENCE is given")
	flag.DurationVar(&o.timeout, "timeout", headerTimeout, "longest wait for the registry's answer to one request")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: push [-ca CA] [-registry HOST:PORT] ARCHIVE [REFERENCE]")
		flag.PrintDefaults()
	}
	flag.Parse()
	o.archive, o.ref = flag.Arg(0), flag.Arg(1)
	if err := o.validate(flag.NArg()); err != nil {
		fmt.Fprintf(os.Stderr, "push: %v\n", err)
		flag.Usage()
		os.Exit(2)
	}
	pushed, err := push(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "push: %s: %v\n", o.archive, err)
		os.Exit(1)
	}
	fmt.Println(pushed)
}

type options struct {
	ca, registry, archive, ref string
	timeout                    time.Duration
}

func (o options) validate(nargs int) error {
	switch {
	case nargs < 1 || nargs > 2:
		return errors.New("one ARCHIVE and at most one REFERENCE")
	case o.ref == "" && o.registry == "":
		return errors.New("give a REFERENCE or -registry")
	}
	return nil
}
