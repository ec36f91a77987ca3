//go:build tools

// Package deps pins the project's dependency set in go.mod, so that
// `go mod tidy` keeps it while packages are still being written.
package deps

import (
	_ "github.com/anishathalye/porcupine"
	_ "github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	_ "github.com/google/go-containerregistry/pkg/v1/mutate"
	_ "github.com/google/go-containerregistry/pkg/v1/tarball"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/vishvananda/netlink"
	_ "go.etcd.io/bbolt"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/leaderelection"
	_ "sigs.k8s.io/e2e-framework/pkg/env"
	_ "sigs.k8s.io/e2e-framework/pkg/features"
	_ "sigs.k8s.io/kind/pkg/cluster"
)
