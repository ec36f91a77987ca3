// Package chaosmanifests embeds the built-in chaos executor's manifests
// (Namespace, NetworkChaos CRD, RBAC, agent DaemonSet), applied in file
// order by chaos.BuiltIn.Install.
package chaosmanifests

import "embed"

// FS holds the *.yaml files of this directory.
//
//go:embed *.yaml
var FS embed.FS
