// Command etcd is etcd's own main, built from the go.etcd.io/etcd/server/v3
// version that k8s.io/kubernetes pins, so that the local cluster and the
// integration tests run the etcd that upstream tests against.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
