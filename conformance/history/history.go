// Package history is the recorded history of one conformance run as plain
// data: what the Lease watch saw, what the sink received, what each
// reconciler pod logged, when chaos was injected and healed, and what each
// scenario expects of the checks. It is saved as history.json so that every
// verdict can be recomputed offline from it.
package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/witness/record"
)

// FormatVersion is bumped on incompatible changes to the JSON shape.
const FormatVersion = 1

// Run is one invocation of the suite: several scenarios.
type Run struct {
	Format    int         `json:"format"`
	Meta      Meta        `json:"meta"`
	Scenarios []*Scenario `json:"scenarios"`
	// NotRunnable are the scenarios the run selected but its target could
	// not run (a fault its chaos executor cannot inject), and why: no
	// verdict, and the reports list them.
	NotRunnable []NotRunnable `json:"not_runnable,omitempty"`
}

// NotRunnable is one scenario a run skipped because its target cannot run
// it.
type NotRunnable struct {
	Scenario string `json:"scenario"`
	Reason   string `json:"reason"`
}

// Meta describes the run as a whole.
type Meta struct {
	RunID    string            `json:"run_id"`
	Seed     int64             `json:"seed"`
	Started  time.Time         `json:"started"`
	Ended    time.Time         `json:"ended"`
	Versions map[string]string `json:"versions,omitempty"` // e.g. go, kubernetes, fencecheck commit
	Flags    []string          `json:"flags,omitempty"`    // the suite's command line
}

// Scenario is everything recorded for one scenario, in its own namespace.
type Scenario struct {
	Name        string             `json:"name"`
	Description string             `json:"description,omitempty"`
	Namespace   string             `json:"namespace,omitempty"`
	Config      Config             `json:"config"`
	Phases      []Phase            `json:"phases,omitempty"`
	Lease       LeaseWatch         `json:"lease"`
	Attempts    []contract.Attempt `json:"attempts"`
	// FinalRecords is the sink's state read at the end (optional; when
	// absent the checks replay the committed attempts instead).
	FinalRecords []contract.Record           `json:"final_records,omitempty"`
	Events       map[string][]eventlog.Event `json:"events"` // by pod name
	// Witness is the harness's own record of every request the reconcilers
	// sent to the sink and what came back (the client-side history).
	Witness *record.History        `json:"witness,omitempty"`
	Chaos   []ChaosWindow          `json:"chaos,omitempty"`
	Expect  map[string]Expectation `json:"expect"` // by check name
	// ExpectChanges are the expectations the run changed from the
	// scenario's definition, and why (the faults a schedule drew, a sink
	// crash that took the sink's own history, a controller with no event
	// log); Expect is what they led to.
	ExpectChanges []ExpectChange `json:"expect_changes,omitempty"`
	// Status is each reconciler pod's /status document at the end.
	Status map[string]json.RawMessage `json:"status,omitempty"`
	// Errors are collection problems (a follower that failed, a fetch that
	// failed); they are evidence, and the report shows them.
	Errors []string `json:"errors,omitempty"`
	// Missing is evidence the harness could not collect, by source
	// (EvidenceSink, ...): every check that needs it is INCONCLUSIVE.
	Missing map[string][]string `json:"missing,omitempty"`

	// PodIPs maps the witness's source addresses to pods, over time.
	PodIPs []PodIP `json:"pod_ips,omitempty"`
	// UnderTest names the controller the scenario ran (CONTROLLER=DIR or
	// our fixture) and the images its pods ran.
	UnderTest *UnderTest `json:"under_test,omitempty"`
	// Schedule is the seeded fault schedule the scenario ran, as
	// chaos/schedule records it (replayable from its seed).
	Schedule json.RawMessage `json:"schedule,omitempty"`
}

// UnderTest is the controller under test of one scenario.
type UnderTest struct {
	// Controller is the manifests' directory, or "built-in fixture".
	Controller string `json:"controller"`
	Deployment string `json:"deployment,omitempty"`
	// Images are the image IDs (digests) the pods reported, sorted.
	Images []string `json:"images,omitempty"`
	// Note says why our fixture ran in a run of a user's controller.
	Note string `json:"note,omitempty"`
}

// Config is how the scenario was set up: the timings the checks judge
// against and the modes the components ran in.
type Config struct {
	LeaseDuration Duration `json:"lease_duration"`
	RenewDeadline Duration `json:"renew_deadline"`
	RetryPeriod   Duration `json:"retry_period"`
	DrainTimeout  Duration `json:"drain_timeout"`
	WriteInterval Duration `json:"write_interval,omitempty"`
	// AbortLimit bounds how long a bridge may take to abort on shutdown.
	AbortLimit Duration `json:"abort_limit"`
	// FencingRequired: every commit must carry an epoch and follow its
	// term's fence (true for every scenario of the v1 contract).
	FencingRequired bool `json:"fencing_required"`
	// IgnoreDemotion: the scenario's leader keeps writing after losing the
	// Lease (the driver waits a TTL after the heal before judging it).
	IgnoreDemotion bool     `json:"ignore_demotion,omitempty"`
	ReconcilerArgs []string `json:"reconciler_args,omitempty"`
	SinkArgs       []string `json:"sink_args,omitempty"`
	WitnessArgs    []string `json:"witness_args,omitempty"`
}

// Phase is one timed step of a scenario (deploy, inject, heal, collect ...).
type Phase struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// LeaseWatch is every version of the Lease the watch observed, and the
// stretches of time it could not vouch for.
type LeaseWatch struct {
	Name    string        `json:"name"`
	Start   time.Time     `json:"start"` // watch established
	End     time.Time     `json:"end"`   // watch stopped
	Records []LeaseRecord `json:"records"`
	Gaps    []Gap         `json:"gaps,omitempty"`
}

// LeaseRecord is one observed version of the Lease.
type LeaseRecord struct {
	Observed        time.Time  `json:"observed"`
	Event           string     `json:"event"` // LIST, ADDED, MODIFIED, DELETED
	ResourceVersion string     `json:"resource_version"`
	UID             string     `json:"uid"`
	Holder          string     `json:"holder"`
	TermRaw         string     `json:"term_raw"` // annotation as found ("" if absent)
	Term            uint64     `json:"term"`
	TermOK          bool       `json:"term_ok"` // TermRaw parsed as a decimal uint64
	AcquireTime     *time.Time `json:"acquire_time,omitempty"`
	RenewTime       *time.Time `json:"renew_time,omitempty"`
	Transitions     int32      `json:"transitions,omitempty"`
}

// Gap is a stretch the watch did not see (410 Gone, a lost connection
// that could not resume from its resourceVersion).
type Gap struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Reason string    `json:"reason"`
}

// ExpectChange is one expectation the run changed, from what the
// scenario's definition says to what the verdict is set against.
type ExpectChange struct {
	Check  string      `json:"check"`
	From   Expectation `json:"from"`
	To     Expectation `json:"to"`
	Reason string      `json:"reason"`
}

// ChaosWindow is one injected fault: the pod cut off and when it healed.
type ChaosWindow struct {
	Kind      string    `json:"kind"` // the fault's kind (conformance/fault: partition, pod-delete, ...)
	Pod       string    `json:"pod"`
	Node      string    `json:"node,omitempty"`
	Injected  time.Time `json:"injected"`
	Recovered time.Time `json:"recovered"`
}

// Evidence sources the checks judge from.
const (
	EvidenceLease      = "lease"       // the Lease watch
	EvidenceSink       = "sink"        // the sink's history of attempts
	EvidenceFinalState = "final-state" // the sink's records read at the end
	EvidenceEvents     = "events"      // the reconcilers' event logs
	EvidenceWitness    = "witness"     // the witness's client-side history
)

// MissingEvidence records that evidence from src could not be collected.
func (s *Scenario) MissingEvidence(src, reason string) {
	if s.Missing == nil {
		s.Missing = map[string][]string{}
	}
	s.Missing[src] = append(s.Missing[src], reason)
}

// Expectation is what a check must produce in a scenario (what it did
// produce, set against this, is a check.Outcome).
type Expectation string

const (
	MustPass Expectation = "pass"
	MustFail Expectation = "fail" // a negative control: the broken variant must be caught
	Any      Expectation = "any"  // informative only
)

// ChangeExpect sets what check must produce to to and records the change
// and its reason, when it is one.
func (s *Scenario) ChangeExpect(check string, to Expectation, reason string) {
	from, ok := s.Expect[check]
	if ok && from == to {
		return
	}
	if s.Expect == nil {
		s.Expect = map[string]Expectation{}
	}
	s.Expect[check] = to
	s.ExpectChanges = append(s.ExpectChanges, ExpectChange{Check: check, From: from, To: to, Reason: reason})
}

// Duration is a time.Duration that reads and writes as "4s" in JSON.
type Duration time.Duration

func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"4s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Pods lists the pods with events, sorted.
func (s *Scenario) Pods() []string {
	out := make([]string, 0, len(s.Events))
	for p := range s.Events {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// AllEvents returns every pod's events merged in time order.
func (s *Scenario) AllEvents() []eventlog.Event {
	var out []eventlog.Event
	for _, p := range s.Pods() {
		out = append(out, s.Events[p]...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// Save writes the run as indented JSON, via a temporary file so a crash
// never leaves half a history behind.
func Save(path string, r *Run) error {
	r.Format = FormatVersion
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Load reads a history.json and validates it.
func Load(path string) (*Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(b)
}

// Decode parses and validates a history document.
func Decode(b []byte) (*Run, error) {
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Validate rejects documents the checks cannot judge.
func (r *Run) Validate() error {
	if r.Format != FormatVersion {
		return fmt.Errorf("history: format %d, this build reads %d", r.Format, FormatVersion)
	}
	if len(r.Scenarios) == 0 {
		return errors.New("history: no scenarios")
	}
	for i, n := range r.NotRunnable {
		if n.Scenario == "" || n.Reason == "" {
			return fmt.Errorf("history: not-runnable entry %d has no scenario or no reason", i)
		}
	}
	seen := map[string]bool{}
	for i, s := range r.Scenarios {
		if s == nil || s.Name == "" {
			return fmt.Errorf("history: scenario %d has no name", i)
		}
		if seen[s.Name] {
			return fmt.Errorf("history: scenario %q appears twice", s.Name)
		}
		seen[s.Name] = true
		if len(s.Expect) == 0 {
			return fmt.Errorf("history: scenario %q expects nothing", s.Name)
		}
		for c, o := range s.Expect {
			if o != MustPass && o != MustFail && o != Any {
				return fmt.Errorf("history: scenario %q check %q: unknown expectation %q", s.Name, c, o)
			}
		}
		for _, ch := range s.ExpectChanges {
			if ch.Check == "" || ch.Reason == "" || s.Expect[ch.Check] == "" {
				return fmt.Errorf("history: scenario %q: expectation change %+v names no check, no reason, or a check it does not expect", s.Name, ch)
			}
		}
	}
	return nil
}
