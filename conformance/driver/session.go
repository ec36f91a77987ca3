package driver

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/conformance/collect"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/eventlog"
	"github.com/fencecheck/fencecheck/internal/wait"
	"github.com/fencecheck/fencecheck/leader"
)

// Replicas is how many reconcilers race for the Lease.
const Replicas = 3

// Config is what every scenario of a run shares.
type Config struct {
	Timing scenario.Timing
	Seed   int64 // of the repeated scenario's chaos schedule
	RunID  string
	// Takeovers is how many partitions the repeated scenario runs.
	Takeovers int
	// WaitTimeout bounds any one wait inside a scenario.
	WaitTimeout time.Duration
	// Quiet, shared by every driver of a run, keeps fault steps apart
	// from other scenarios' deploys; nil when scenarios run
	// one at a time.
	Quiet *Quiet
	Logf  func(format string, args ...any)
}

// Driver runs scenarios on one target.
type Driver struct {
	Target Target
	Config
}

// Session is one scenario in progress.
type Session struct {
	dr    *Driver
	def   scenario.Def
	NS    string
	Hist  *history.Scenario
	dep   Deployment
	plan  scenario.Plan
	lease *collect.LeaseWatcher
	// podsSeen is every reconciler pod listed so far (PodOf).
	podsMu   sync.Mutex
	podsSeen map[string]string
	// reopen lets heavy phases in before the fault step under way ends
	// (nil outside one, or with no gate).
	reopen func()
}

func (dr *Driver) log(format string, a ...any) {
	if dr.Logf != nil {
		dr.Logf(format, a...)
	}
}

// Namespace is a scenario's namespace: its name and the run id's tail,
// within the 63 characters a namespace may have.
func (dr *Driver) Namespace(d scenario.Def) string {
	id := strings.ToLower(dr.RunID)
	if len(id) > 12 {
		id = id[len(id)-12:]
	}
	ns := "fc-" + d.Name + "-" + id
	if len(ns) > 63 {
		ns = ns[:63]
	}
	return strings.Trim(ns, "-")
}

// Run runs a whole scenario and always returns what it recorded, with
// the first error that stopped it.
func (dr *Driver) Run(ctx context.Context, d scenario.Def) (*history.Scenario, error) {
	s, err := dr.Start(ctx, d)
	if err == nil {
		err = s.Faults(ctx)
	}
	h, ferr := s.Finish(context.WithoutCancel(ctx))
	if cerr := s.Close(context.WithoutCancel(ctx)); cerr != nil {
		dr.log("%s: close: %v", d.Name, cerr)
	}
	if err != nil {
		return h, err
	}
	return h, ferr
}

// Start opens the scenario's namespace, starts the Lease watch, deploys
// and waits for a leader that commits. The session it returns is never
// nil, so that what was recorded can still be collected.
func (dr *Driver) Start(ctx context.Context, d scenario.Def) (*Session, error) {
	s := &Session{dr: dr, def: d, NS: dr.Namespace(d)}
	s.Hist = &history.Scenario{Name: d.Name, Description: d.Description, Namespace: s.NS, Config: dr.Timing.Config(d),
		Expect: maps.Clone(d.Expect), Events: map[string][]eventlog.Event{}}
	// The plan first: the history records the schedule (the report shows
	// what to replay) and the expectations its draw changed, and why,
	// whatever happens next.
	var err error
	if s.plan, err = d.Plan(dr.Seed, dr.Timing, dr.Takeovers); err != nil {
		return s, err
	}
	if s.plan.Schedule != nil {
		if s.Hist.Schedule, err = s.plan.Schedule.Marshal(); err != nil {
			return s, err
		}
	}
	scenario.Expect(s.Hist, d, s.plan)
	if s.dep, err = dr.Target.Open(ctx, s.NS); err != nil {
		return s, fmt.Errorf("%s target: %w", dr.Target.Name(), err)
	}
	// The watch starts before the deploy, so it covers every phase.
	if s.lease, err = collect.WatchLease(ctx, dr.Target.Kube(), s.NS, leader.LeaseName, leader.TermAnnotation, dr.Logf); err != nil {
		return s, err
	}
	spec := Spec{Replicas: Replicas, ReconcilerArgs: dr.Timing.ReconcilerArgs(d), SinkArgs: d.Sink.Args(),
		WitnessArgs: d.WitnessArgs()}
	err = s.phase(ctx, scenario.PhaseDeploy, fault.GateHeavy, func() error { return s.dep.Deploy(ctx, spec) })
	s.Hist.UnderTest = s.dep.UnderTest(ctx)
	if err != nil {
		return s, err
	}
	return s, s.phase(ctx, scenario.PhaseSteady, fault.GateNone, func() error {
		holder, err := s.WaitHolder(ctx, "")
		if err != nil {
			return err
		}
		dr.log("%s: leader %s", d.Name, holder)
		return s.WaitCommits(ctx, time.Time{}, fault.SettleCommits)
	})
}

// Faults runs the scenario's plan, one fault or a seeded schedule, each
// step after its gap, through its fault's Inject. It returns once the
// last step's takeover has settled.
func (s *Session) Faults(ctx context.Context) error {
	p := s.plan
	faults := make([]fault.Fault, len(p.Steps))
	for i, st := range p.Steps {
		f, ok := fault.Of(st.KindOf())
		if !ok {
			return fmt.Errorf("step %d: no fault %q (conformance/fault)", st.Index, st.KindOf())
		}
		faults[i] = f
	}
	for i, st := range p.Steps {
		if st.Gap > 0 {
			// The schedule's quiet time between bursts: chaos timing, not
			// synchronisation (a phase of its own for the waits model).
			if err := s.phase(ctx, fmt.Sprintf("%s%d", scenario.PhaseGap, st.Index), fault.GateNone, func() error { return wait.Hold(ctx, st.Gap) }); err != nil {
				return err
			}
		}
		if err := s.phase(ctx, st.Phase, faults[i].Gate, func() error { return faults[i].Inject(ctx, s, st.Step) }); err != nil {
			return err
		}
	}
	return nil
}

// phase times fn as a named phase of the scenario, behind the run's
// Quiet gate as its class says: a deploy is heavy, a fault step waits for
// quiet and holds it until its failover is over, a wait (steady, a
// schedule's gap, the step-down window) is neither. The time spent at the
// gate is not the phase's own.
func (s *Session) phase(ctx context.Context, name string, gate fault.Gate, fn func() error) error {
	var start time.Time
	timed := func() error {
		start = time.Now()
		s.dr.log("%s: phase %s ...", s.def.Name, name)
		return fn()
	}
	var waited time.Duration
	var err error
	switch gate {
	case fault.GateHeavy:
		waited, err = s.dr.Quiet.Heavy(ctx, timed)
	case fault.GateNone:
		err = timed()
	default:
		waited, err = s.dr.Quiet.Fault(ctx, func(reopen func()) error {
			if s.dr.Quiet != nil {
				s.reopen = reopen
				defer func() { s.reopen = nil }()
				defer s.reopenAfterFailover(ctx, name, reopen)()
			}
			return timed()
		})
	}
	if start.IsZero() {
		start = time.Now() // the gate's wait itself failed
	}
	s.gateWaited("phase "+name, waited)
	s.Hist.Phases = append(s.Hist.Phases, history.Phase{Name: name, Start: start, End: time.Now()})
	if err != nil {
		s.dr.log("%s: phase %s FAILED after %v: %v", s.def.Name, name, time.Since(start).Round(time.Millisecond), err)
		return fmt.Errorf("%s: %w", name, err)
	}
	s.dr.log("%s: phase %s done in %v", s.def.Name, name, time.Since(start).Round(time.Millisecond))
	return nil
}

// gateWaited logs a wait at the quiet gate long enough to matter.
func (s *Session) gateWaited(what string, waited time.Duration) {
	if waited > time.Second {
		s.dr.log("%s: %s waited %v at the quiet gate", s.def.Name, what, waited.Round(time.Millisecond))
	}
}

// Close releases the scenario's namespace and processes.
func (s *Session) Close(ctx context.Context) error {
	if s.dep == nil {
		return nil
	}
	return s.dep.Close(ctx)
}
