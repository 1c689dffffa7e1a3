// Package discoveryjobs is the master's discovery role: it runs one
// discovery Job per node at a time when a run is requested (a new node, a
// NodeDiskState generation, a finished cleanup), within a rate limit and a
// backoff of failed runs; it consumes a finished Job's report once (as soon
// as its pod succeeded, without waiting for the Job's status), checks it
// against the configuration and the node the pod ran on, reports failures,
// rejections and skipped entries as Events on the Node, hands an accepted
// report to a Consumer (publishing), and deletes the Job. The Job, its
// termination messages and the report are specified in
// pkg/localpv/README.md ("Discovery Job"). Its memory of the nodes is an
// optimisation: losing it on restart causes one discovery per node.
package discoveryjobs
