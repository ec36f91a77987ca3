// Package driver runs conformance scenarios: one choreography (deploy,
// steady, the scenario's fault steps, collect) for every target, and one
// suite runner (RunSuite) for the e2e suite, the local integration test
// and the CLI. A Target is where the components run (a Kubernetes
// cluster, or local processes against a local apiserver); the driver only
// asks it to deploy, to read the sink, to act for a fault
// (fault.Actions) and to stop the writers. Every fault step, of one fault
// or of a schedule, runs through its fault's Inject (conformance/fault).
// The driver decides nothing about fencing: the verdicts come from
// conformance/check over the history it returns.
package driver

import (
	"context"
	"encoding/json"

	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
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
	// Lacks says why the target cannot do c ("" when it can): a fault
	// that needs it is not runnable there (fault.Fault.Needs).
	Lacks(c fault.Capability) string
}

// Deployment is one scenario's components as a target runs them: the
// actions faults take on them (fault.Actions), and what the driver
// deploys, reads and stops. Every method that changes something returns
// once the change took effect.
type Deployment interface {
	fault.Actions
	// Deploy starts the sink, then the reconciler replicas, and returns
	// when all are ready.
	Deploy(ctx context.Context, spec Spec) error
	// Events are the reconcilers' event logs, recorded from their start.
	Events() EventLog
	// Sink reads the sink's history and state.
	Sink() Sink
	// Status is pod's /status document.
	Status(ctx context.Context, pod string) (json.RawMessage, error)
	// StopReconcilers stops every reconciler (SIGTERM) and returns once
	// each has exited, so the sink is read at rest.
	StopReconcilers(ctx context.Context) error
	// PodIPs is which address each reconciler pod reached the witness
	// from, over time (the cluster from the API, the local target from
	// its own dialers), so the checks can name a request's sender
	// without trusting anything the sender says. Called once, after
	// StopReconcilers.
	PodIPs() ([]history.PodIP, error)
	// UnderTest names the controller the deployment runs and its pods'
	// images, for the history (nil: nothing to say beyond the target).
	UnderTest(ctx context.Context) *history.UnderTest
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
