// Package cluster holds the proof that the kind cluster brought up by
// scripts/kind-up.sh is wired correctly (run with -tags cluster by
// `make cluster-test`). See cluster_test.go.
package cluster
