// This file is added to crictl v1.34.0's main package by scripts/k8s-bins.sh
// (go build -overlay), with one line of its exec.go changed to use it.
// Why: the node builds crictl v1.34.0 in the same build list as Kubernetes
// v1.35.3, and kubectl v0.35 gave its term package its own TerminalSize type,
// so term.TTY.MonitorSize no longer returns a client-go
// remotecommand.TerminalSizeQueue. kubectl v0.35's own exec command adapts it
// the same way (k8s.io/kubectl/pkg/cmd/exec: terminalSizeQueueAdapter). The
// directory's leading underscore keeps the go command from building it here.

package main

import (
	remoteclient "k8s.io/client-go/tools/remotecommand"
	"k8s.io/kubectl/pkg/util/term"
)

// termSizeQueue turns kubectl's terminal size events into client-go's.
type termSizeQueue struct{ term.TerminalSizeQueue }

func (q termSizeQueue) Next() *remoteclient.TerminalSize {
	next := q.TerminalSizeQueue.Next()
	if next == nil {
		return nil
	}
	return &remoteclient.TerminalSize{Width: next.Width, Height: next.Height}
}
