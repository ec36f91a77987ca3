package scenario

import (
	"fmt"
	"slices"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
)

// Schedule is a seeded schedule of several faults that a scenario runs
// instead of one fault.
type Schedule string

const (
	// Repeated is the seeded partition schedule (Takeovers cuts of the
	// leader or a follower), then a leader pod deletion and a rolling
	// restart.
	Repeated Schedule = "repeated"
	// Mixed is MixedSteps faults drawn by weight from fault.Mixed().
	Mixed Schedule = "mixed"
	// MixedEveryKind is every kind of fault.Mixed() once, in an order the
	// seed draws (fault.Config.EveryKind): whatever the seed, one run
	// shows every kind.
	MixedEveryKind Schedule = "mixed-every-kind"
)

// MixedSteps is how many faults the mixed schedule runs.
const MixedSteps = 5

// Step is one fault step of a scenario and the phase that runs it.
type Step struct {
	fault.Step
	// Phase names the step in the history: the fault's kind for a
	// scenario of one fault, "<kind>-<index>[-<role>]" in a schedule.
	Phase string
}

// Plan is what a scenario runs: its steps in order, each through its
// fault's Inject, and the seeded schedule the history records (none for
// one fault).
type Plan struct {
	Steps    []Step
	Schedule *fault.Schedule
}

// Kinds are the faults the scenario may inject: its fault, or every kind
// its schedule can draw.
func (d Def) Kinds() []fault.Kind {
	switch d.Schedule {
	case "":
		return []fault.Kind{d.Fault}
	case Repeated:
		return []fault.Kind{fault.Partition, fault.PodDelete, fault.RollingRestart}
	}
	var out []fault.Kind
	for _, w := range fault.Mixed() {
		out = append(out, w.Kind)
	}
	return out
}

// WitnessArgs are the witness's flags: the scenario's nemesis, run-time
// arming included when a fault it may inject needs it.
func (d Def) WitnessArgs() []string {
	n := d.Nemesis
	for _, k := range d.Kinds() {
		if f, ok := fault.Of(k); ok && f.WitnessRuntime {
			n.Runtime = true
		}
	}
	return n.Args()
}

// Plan draws the scenario's steps: its one fault (for the run's partition
// length when it lasts), or its seeded schedule of seed.
func (d Def) Plan(seed int64, t Timing, takeovers int) (Plan, error) {
	if d.Schedule == "" {
		if _, ok := fault.Of(d.Fault); !ok {
			return Plan{}, fmt.Errorf("%s: no fault %q (conformance/fault)", d.Name, d.Fault)
		}
		st := fault.Step{Kind: d.Fault, Role: fault.Leader, Length: t.Partition}
		return Plan{Steps: []Step{{Step: st, Phase: string(d.Fault)}}}, nil
	}
	var cfg fault.Config
	var tail []fault.Kind
	switch d.Schedule {
	case Repeated:
		cfg = repeatedConfig(seed, t, takeovers)
		tail = []fault.Kind{fault.PodDelete, fault.RollingRestart}
	case Mixed, MixedEveryKind:
		cfg = MixedConfig(seed, t, d.Schedule == MixedEveryKind)
	default:
		return Plan{}, fmt.Errorf("%s: no schedule %q", d.Name, d.Schedule)
	}
	sch, err := fault.Generate(cfg)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Schedule: &sch}
	for _, st := range sch.Steps {
		p.Steps = append(p.Steps, Step{Step: st, Phase: phaseOf(st)})
	}
	for _, k := range tail {
		st := fault.Step{Index: len(p.Steps), Kind: k, Role: fault.Leader}
		p.Steps = append(p.Steps, Step{Step: st, Phase: phaseOf(st)})
	}
	return p, nil
}

// phaseOf names a schedule's step: its kind and index, and its role for a
// kind that draws one ("partition-0-leader", "pod-delete-3").
func phaseOf(st fault.Step) string {
	name := fmt.Sprintf("%s-%d", st.KindOf(), st.Index)
	if f, ok := fault.Of(st.KindOf()); ok && f.Roles {
		name += "-" + string(st.Role)
	}
	return name
}

// repeatedConfig is the repeated scenario's partition schedule: takeovers
// cuts, each at least twice the TTL, so a takeover surely happens before
// the heal (the successor may wait up to TTL + 2.2x retry).
func repeatedConfig(seed int64, t Timing, takeovers int) fault.Config {
	cfg := fault.DefaultConfig(uint64(seed), t.LeaseDuration)
	cfg.Steps = max(takeovers, 1)
	cfg.MinMultiple = max(cfg.MinMultiple, 2)
	cfg.MaxMultiple = max(cfg.MaxMultiple, cfg.MinMultiple)
	return cfg
}

// MixedConfig is the mixed schedule's generator config for a seed: every
// cut and pause at least twice the TTL, so the leader surely goes stale.
// With everyKind, one step per kind of fault.Mixed(), and shorter gaps so
// the run stays within about three minutes.
func MixedConfig(seed int64, t Timing, everyKind bool) fault.Config {
	cfg := fault.DefaultConfig(uint64(seed), t.LeaseDuration)
	cfg.Steps = MixedSteps
	cfg.MinMultiple = max(cfg.MinMultiple, 2) // a cut of the leader surely ends in a takeover
	cfg.MaxMultiple = max(cfg.MaxMultiple, cfg.MinMultiple)
	cfg.Kinds = fault.Mixed()
	if everyKind {
		cfg.EveryKind, cfg.Steps = true, len(cfg.Kinds)
		cfg.MaxMultiple = cfg.MinMultiple + 0.5
		cfg.MinGap, cfg.MaxGap = t.LeaseDuration/2, t.LeaseDuration
	}
	return cfg
}

// Expect sets, in h, what the run expects of its checks once its plan is
// drawn, and records each change from the definition with its reason:
//   - in a schedule that mixes kinds, the checks of every kind it drew
//     must pass and those of the kinds it did not draw are informative
//     (each is INCONCLUSIVE without its fault's evidence, never a pass);
//     a negative control keeps its own: only its must-fail checks count;
//   - after a fault that loses the sink's own history (a sink crash),
//     every must-pass check that reads that history is informative: the
//     killed instance's history went with it.
func Expect(h *history.Scenario, d Def, p Plan) {
	drawn := map[fault.Kind]bool{}
	for _, st := range p.Steps {
		drawn[st.KindOf()] = true
	}
	if p.Schedule != nil && len(p.Schedule.Config.Kinds) > 0 {
		control := d.NegativeControl()
		for _, w := range p.Schedule.Config.Kinds {
			f, _ := fault.Of(w.Kind)
			for _, c := range f.Checks {
				switch {
				case h.Expect[c] == history.MustFail:
				case drawn[w.Kind] && !control:
					h.ChangeExpect(c, history.MustPass, fmt.Sprintf("the schedule drew %s, whose check this is", w.Kind))
				default:
					why := fmt.Sprintf("the schedule did not draw %s, whose check this is", w.Kind)
					if control {
						why = "a negative control: only its must-fail checks count"
					}
					h.ChangeExpect(c, history.Any, why)
				}
			}
		}
	}
	for _, w := range fault.All {
		if !w.LosesSinkHistory || !drawn[w.Kind] {
			continue
		}
		for _, c := range check.All {
			if h.Expect[c.Name] == history.MustPass && slices.Contains(c.Needs, history.EvidenceSink) {
				h.ChangeExpect(c.Name, history.Any, fmt.Sprintf("the %s fault took the sink's own history of the attempts before it (the killed instance kept it in memory), which this check reads", w.Kind))
			}
		}
	}
}
