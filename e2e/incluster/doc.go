// Package incluster tests sbx deployed on the cluster it drives: the
// Kustomize base deploy/kubernetes, through the overlay testdata/overlay
// (images made by `sbx kubernetes images` and `sbx template export` and
// imported into the test cluster's containerd, since there is no registry;
// the ledger on the tests' PostgreSQL, reached from the pods through
// k8stest.PodPostgres), applied to internal/k8stest's cluster. Its tests
// drive the replicas over their pod IPs with the Go client and watch the
// cluster with kubectl.
package incluster
