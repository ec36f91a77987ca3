// Package driver runs a conformance scenario: one choreography (deploy,
// steady, inject, takeover, collect) for every target. A Target is where
// the components run (a Kubernetes cluster, or local processes against a
// local apiserver); the driver only asks it to deploy, to read the sink, to
// cut a pod off and to stop the writers. The driver decides nothing about
// fencing: the verdicts come from conformance/check over the history it
// returns.
package driver

import (
	"context"
	"encoding/json"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/witness/record"
)

// Spec is what a scenario deploys.
type Spec struct {
	Replicas       int
	ReconcilerArgs []string // appended to the reconciler's own flags
	SinkArgs       []string // appended to the sink's own flags
	WitnessArgs    []string // appended to the witness's own flags (its nemesis)
}

// Target runs the components under test somewhere.
type Target interface {
	// Name is shown in logs and reports ("cluster", "local").
	Name() string
	// Kube reaches the apiserver the reconcilers elect on: the Lease watch
	// reads it, so that the term's evidence is never the reconciler's word.
	Kube() kubernetes.Interface
	// Open prepares one scenario's namespace and starts nothing, so the
	// recorders can be running before the first pod is.
	Open(ctx context.Context, namespace string) (Deployment, error)
}

// Deployment is one scenario's components as a target runs them. Every
// method that changes something returns once the change took effect.
type Deployment interface {
	// Deploy starts the sink, then the reconciler replicas, and returns
	// when all are ready.
	Deploy(ctx context.Context, spec Spec) error
	// Pods are the running reconciler pods, sorted.
	Pods(ctx context.Context) ([]string, error)
	// Events are the reconcilers' event logs, recorded from their start.
	Events() EventLog
	// Sink reads the sink's history and state.
	Sink() Sink
	// Witness reads the history of the witness, the harness's recording
	// proxy between the reconcilers and the sink.
	Witness(ctx context.Context) (*record.History, error)
	// Partition cuts pod off from the apiserver (and from the sink when
	// alsoSink) for length and returns once the cut is healed.
	Partition(ctx context.Context, pod string, length time.Duration, alsoSink bool) (history.ChaosWindow, error)
	// Pause stops every process of pod (the cluster: the cgroup freezer;
	// locally: SIGSTOP) for length and returns once it runs again.
	Pause(ctx context.Context, pod string, length time.Duration) (history.ChaosWindow, error)
	// DeletePod deletes pod (SIGTERM) and returns once it has exited; a
	// replacement starts, as a ReplicaSet's would.
	DeletePod(ctx context.Context, pod string) (history.ChaosWindow, error)
	// RollingRestart replaces every reconciler pod, one at a time, and
	// returns when the new ones are ready and the old ones gone. The
	// window names leader, the pod whose replacement is the takeover.
	RollingRestart(ctx context.Context, leader string) (history.ChaosWindow, error)
	// CrashSink SIGKILLs the sink process, its data kept (the same volume
	// or data dir), and returns once the restarted sink answers; the
	// window's Injected is taken just before the kill.
	CrashSink(ctx context.Context) (history.ChaosWindow, error)
	// WitnessAdmin POSTs req as JSON to path on the witness's admin
	// listener and decodes the answer into resp. A target whose sink
	// requires a writer token sets it as the Authorization of a
	// *record.ProbeRequest before sending it.
	WitnessAdmin(ctx context.Context, path string, req, resp any) error
	// DeleteLease deletes the reconcilers' Lease (the replicas re-create
	// it) and returns once the delete was accepted.
	DeleteLease(ctx context.Context) (history.ChaosWindow, error)
	// Status is pod's /status document.
	Status(ctx context.Context, pod string) (json.RawMessage, error)
	// StopReconcilers stops every reconciler (SIGTERM) and returns once
	// each has exited, so the sink is read at rest.
	StopReconcilers(ctx context.Context) error
	// Close releases what the scenario used (namespace, processes).
	Close(ctx context.Context) error
}

// Sink reads the sink under test.
type Sink interface {
	// History is every attempt the sink received (GET /v1/history); a
	// *HistoryDropped error comes with the attempts when the sink says it
	// left some out.
	History(ctx context.Context) ([]contract.Attempt, error)
	// Records reads the final record of each key; keys with no record are
	// left out.
	Records(ctx context.Context, keys []string) ([]contract.Record, error)
}

// EventLog is the reconcilers' event logs (FCEVENT lines) by pod.
type EventLog interface {
	Snapshot() map[string][]eventlog.Event
	// Refresh re-reads pod's whole log (a follow stream may stall).
	Refresh(ctx context.Context, pod string) error
	// Stop ends the recording: every pod's events and the problems seen.
	Stop(ctx context.Context) (map[string][]eventlog.Event, []string)
}
