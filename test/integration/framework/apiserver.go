package framework

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// ControlPlane is one running kube-apiserver.
type ControlPlane struct {
	// Config is an admin client config for the apiserver.
	Config *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
}

// StartAPIServer starts upstream's kube-apiserver in-process against the
// package's etcd (see EtcdMain), under a key prefix of its own, with
// extraFlags added to the test server's defaults. It stops when t ends.
func StartAPIServer(t testing.TB, extraFlags ...string) *ControlPlane {
	t.Helper()
	if etcdURL == "" {
		t.Fatal("integration framework: no etcd; call framework.EtcdMain from TestMain")
	}
	storage := storagebackend.NewDefaultConfig("/nodeplug-"+string(uuid.NewUUID()), nil)
	storage.Transport.ServerList = []string{etcdURL}
	flags := append([]string{"--authorization-mode=RBAC"}, extraFlags...)
	server := apiservertesting.StartTestServerOrDie(t, apiservertesting.NewDefaultTestServerOptions(), flags, storage)
	t.Cleanup(server.TearDownFn)
	cfg := rest.CopyConfig(server.ClientConfig)
	cfg.QPS, cfg.Burst = 200, 400
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("integration framework: client: %v", err)
	}
	return &ControlPlane{Config: cfg, Client: client}
}
