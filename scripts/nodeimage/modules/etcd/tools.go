//go:build tools

// Package tools pins etcd (the version kubeadm 1.34 expects) and etcdctl.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
