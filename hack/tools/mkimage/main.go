// Command mkimage writes a single-layer container image as a docker-archive
// tarball (the format `ctr images import` reads), without docker or a
// registry. The output is reproducible: same inputs, same bytes.
//
//	mkimage -o out.tar -name docker.io/nodeplug/busybox:1 [-arch arm64] \
//	  -file /bin/busybox=/bin/busybox:0755 -link /bin/sh=busybox \
//	  -entrypoint /bin/sh -cmd -c,'sleep 3600'
//
// -user 65532:65532 makes the image run as that user, and
// -cap /coredns=net_bind_service gives a file capabilities, as setcap
// does, so that a non-root process may bind a port below 1024.
//
// `mkimage index` joins docker-archives built for different architectures
// into one OCI image layout tarball holding one multi-platform image index:
//
//	mkimage index -o out.oci.tar -name docker.io/nodeplug/pause:1 pause-amd64.tar pause-arm64.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "index" {
		index(os.Args[2:])
		return
	}
	var spec imageSpec
	var files, links, dirs, caps listFlag
	var entrypoint, cmd, env string
	flag.StringVar(&spec.out, "o", "", "output tarball (docker-archive)")
	flag.StringVar(&spec.name, "name", "", "image reference, e.g. docker.io/nodeplug/pause:1")
	flag.StringVar(&spec.arch, "arch", "amd64", "architecture the image's config names: amd64 or arm64 (the files must be built for it)")
	flag.Var(&files, "file", "DEST=SRC[:MODE] file to add (repeatable); MODE in octal, default SRC's mode")
	flag.Var(&links, "link", "DEST=TARGET symlink to add (repeatable)")
	flag.Var(&dirs, "dir", "DEST directory to add (repeatable)")
	flag.Var(&caps, "cap", "DEST=CAP[,CAP...] file capabilities (permitted and effective) of the -file at DEST, e.g. /coredns=net_bind_service (repeatable)")
	flag.StringVar(&spec.user, "user", "", "numeric UID or UID:GID the image runs as (default root)")
	flag.StringVar(&entrypoint, "entrypoint", "", "comma-separated entrypoint")
	flag.StringVar(&cmd, "cmd", "", "comma-separated default command")
	flag.StringVar(&env, "env", "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "comma-separated environment")
	flag.Parse()
	spec.entrypoint, spec.cmd, spec.env = split(entrypoint), split(cmd), split(env)
	if err := spec.parse(files, links, dirs); err != nil {
		fail(err)
	}
	if err := spec.addCapabilities(caps); err != nil {
		fail(err)
	}
	if err := spec.write(); err != nil {
		fail(err)
	}
}

// index is `mkimage index -o OUT -name REF ARCHIVE...`.
func index(args []string) {
	fs := flag.NewFlagSet("mkimage index", flag.ExitOnError)
	out := fs.String("o", "", "output tarball (OCI image layout)")
	name := fs.String("name", "", "image reference of the index, e.g. docker.io/nodeplug/pause:1")
	_ = fs.Parse(args)
	if err := writeIndex(*out, *name, fs.Args()); err != nil {
		fail(err)
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mkimage:", err)
	os.Exit(1)
}
