// Command registry serves an OCI distribution registry for the local
// cluster (make local-up, make kubeadm-up): distribution's registry
// handlers (github.com/distribution/distribution/v3, pinned by this
// module's go.mod) with filesystem storage, over TLS, on one or more
// addresses at once, so that the host pushes on its loopback and every
// node pulls on the nodes' bridge.
//
//	registry -root DIR -cert CRT -key KEY -listen 127.0.0.1:5000 -listen 198.51.100.1:5000
//
// It has no authentication: it listens only on the cluster's own
// addresses. SIGTERM or SIGINT stops it after the requests in flight.
// The push subcommand's code is in ./push (docs/local-cluster.md,
// "The registry").
package main
