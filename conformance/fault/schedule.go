package fault

// Seeded, replayable fault schedules: how long each cut lasts (a multiple
// of the lease TTL), which pod it targets (the leader or a follower), the
// gap before it and how many faults come in a row, and, in a mixed
// schedule, which kind of fault each step is. The same Config always
// yields the same Schedule.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Role says which pod a step cuts off.
type Role string

const (
	Leader   Role = "leader"
	Follower Role = "follower"
)

// A schedule without kinds (Config.Kinds empty) is partitions only,
// exactly as before kinds existed; one with kinds draws each step's kind
// by weight. The generator draws a Length for the kinds that last
// (Fault.Lasts), a Role for those with roles (Fault.Roles), and nothing
// for the others.

// lasts reports whether a step of kind k has a Length (a multiple of the
// TTL, so the leader surely goes stale): a cut or a pause.
func lasts(k Kind) bool {
	f, ok := Of(k)
	return ok && f.Lasts
}

// roles reports whether a step of kind k hits the leader or a follower.
func roles(k Kind) bool {
	f, ok := Of(k)
	return ok && f.Roles
}

// Weight is a kind's relative chance in a mixed schedule.
type Weight struct {
	Kind   Kind `json:"kind"`
	Weight int  `json:"weight"`
}

// Config bounds the generator. Multiples are of the lease TTL.
type Config struct {
	Seed        uint64        `json:"seed"`
	TTL         time.Duration `json:"ttl"`
	Steps       int           `json:"steps"`        // number of partitions in total
	MinMultiple float64       `json:"min_multiple"` // shortest cut, in TTLs
	MaxMultiple float64       `json:"max_multiple"` // longest cut, in TTLs
	MinGap      time.Duration `json:"min_gap"`      // quiet time before a burst
	MaxGap      time.Duration `json:"max_gap"`
	MaxBurst    int           `json:"max_burst"`    // cuts in a row (back to back, no gap)
	FollowerPct int           `json:"follower_pct"` // chance (0-100) that a step targets a follower
	Followers   int           `json:"followers"`    // how many followers there are (replicas-1)
	// Kinds, when set, mixes fault kinds by weight (see Kind).
	Kinds []Weight `json:"kinds,omitempty"`
	// EveryKind: the first len(Kinds) steps are every kind once, in a
	// seeded order; the rest are drawn by weight. Every seed then shows
	// every kind in one run.
	EveryKind bool `json:"every_kind,omitempty"`
}

// Step is one fault of a schedule. Gap is waited before it starts (zero
// inside a burst).
type Step struct {
	Index int `json:"index"`
	// Kind is set in mixed schedules only ("" is a partition).
	Kind          Kind          `json:"kind,omitempty"`
	Role          Role          `json:"role"`
	FollowerIndex int           `json:"follower_index,omitempty"` // which follower, by sorted pod name
	Multiple      float64       `json:"multiple"`
	Length        time.Duration `json:"length"`
	Gap           time.Duration `json:"gap"`
	Burst         int           `json:"burst"` // which burst the step belongs to
}

// Schedule is what a run records so it can be replayed with Generate(Config).
type Schedule struct {
	Config Config `json:"config"`
	Steps  []Step `json:"steps"`
}

// DefaultConfig is a reasonable schedule for a 3-replica set with a TTL.
func DefaultConfig(seed uint64, ttl time.Duration) Config {
	return Config{Seed: seed, TTL: ttl, Steps: 3, MinMultiple: 1.5, MaxMultiple: 3,
		MinGap: ttl, MaxGap: 3 * ttl, MaxBurst: 2, FollowerPct: 20, Followers: 2}
}

// Validate reports the first bound that makes no sense.
func (c Config) Validate() error {
	switch {
	case c.TTL <= 0:
		return errors.New("schedule: ttl must be > 0")
	case c.Steps <= 0:
		return errors.New("schedule: steps must be > 0")
	case c.MinMultiple <= 1:
		return fmt.Errorf("schedule: min_multiple %.2f must be > 1 (a cut must outlast the lease TTL)", c.MinMultiple)
	case c.MaxMultiple < c.MinMultiple:
		return fmt.Errorf("schedule: max_multiple %.2f < min_multiple %.2f", c.MaxMultiple, c.MinMultiple)
	case c.MinGap < 0 || c.MaxGap < c.MinGap:
		return fmt.Errorf("schedule: gap bounds [%s, %s] invalid", c.MinGap, c.MaxGap)
	case c.MaxBurst < 1:
		return errors.New("schedule: max_burst must be >= 1")
	case c.FollowerPct < 0 || c.FollowerPct > 100:
		return fmt.Errorf("schedule: follower_pct %d not in 0..100", c.FollowerPct)
	case c.FollowerPct > 0 && c.Followers < 1:
		return errors.New("schedule: follower_pct > 0 needs followers >= 1")
	}
	seen := map[Kind]bool{}
	for _, w := range c.Kinds {
		switch {
		case w.Kind == "":
			return errors.New("schedule: a kind must have a name")
		case seen[w.Kind]:
			return fmt.Errorf("schedule: kind %q listed twice", w.Kind)
		case w.Weight < 1:
			return fmt.Errorf("schedule: kind %q has weight %d, want >= 1", w.Kind, w.Weight)
		}
		seen[w.Kind] = true
	}
	if c.EveryKind && (len(c.Kinds) == 0 || c.Steps < len(c.Kinds)) {
		return fmt.Errorf("schedule: every_kind needs kinds and at least one step per kind (%d steps, %d kinds)", c.Steps, len(c.Kinds))
	}
	return nil
}

// KindOf is the step's kind (a partition in schedules without kinds).
func (st Step) KindOf() Kind {
	if st.Kind == "" {
		return Partition
	}
	return st.Kind
}

// Label names a step for phases and timelines: its kind, and the role
// for a kind with roles ("partition-leader", "pod-delete").
func (st Step) Label() string {
	if roles(st.KindOf()) {
		return string(st.KindOf()) + "-" + string(st.Role)
	}
	return string(st.Kind)
}

// draw picks a kind by weight.
func (c Config) draw(r *rand.Rand) Kind {
	total := 0
	for _, w := range c.Kinds {
		total += w.Weight
	}
	n := r.IntN(total)
	for _, w := range c.Kinds {
		if n < w.Weight {
			return w.Kind
		}
		n -= w.Weight
	}
	return c.Kinds[len(c.Kinds)-1].Kind
}

// Generate builds the schedule for c. Lengths are rounded to 100ms so the
// recorded JSON replays exactly.
func Generate(c Config) (Schedule, error) {
	if err := c.Validate(); err != nil {
		return Schedule{}, err
	}
	r := rand.New(rand.NewPCG(c.Seed, c.Seed^0x9e3779b97f4a7c15))
	s := Schedule{Config: c}
	var first []Kind // every kind once, in a seeded order (EveryKind)
	if c.EveryKind {
		for _, w := range c.Kinds {
			first = append(first, w.Kind)
		}
		r.Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })
	}
	burst, left := 0, 0
	for i := 0; i < c.Steps; i++ {
		st := Step{Index: i, Role: Leader}
		if left == 0 { // a new burst starts after a gap
			burst++
			left = 1 + r.IntN(c.MaxBurst)
			st.Gap = c.MinGap + time.Duration(r.Int64N(int64(c.MaxGap-c.MinGap)+1))
			st.Gap = st.Gap.Round(100 * time.Millisecond)
		}
		left--
		st.Burst = burst
		if len(c.Kinds) > 0 {
			if i < len(first) {
				st.Kind = first[i]
			} else {
				st.Kind = c.draw(r)
			}
			if !lasts(st.Kind) {
				s.Steps = append(s.Steps, st) // acts on the leader at once: no role, no length
				continue
			}
		}
		if roles(st.KindOf()) && c.FollowerPct > 0 && r.IntN(100) < c.FollowerPct {
			st.Role = Follower
			st.FollowerIndex = r.IntN(c.Followers)
		}
		m := c.MinMultiple + r.Float64()*(c.MaxMultiple-c.MinMultiple)
		st.Length = time.Duration(m * float64(c.TTL)).Round(100 * time.Millisecond)
		if st.Length <= c.TTL { // rounding must never make a cut too short
			st.Length = c.TTL + 100*time.Millisecond
		}
		st.Multiple = float64(st.Length) / float64(c.TTL)
		s.Steps = append(s.Steps, st)
	}
	return s, nil
}

// Check verifies a schedule (for example one read back from a report)
// against its own config: the bounds hold and it is exactly what the seed
// generates, so a hand-edited or corrupted schedule is caught.
func Check(s Schedule) error {
	want, err := Generate(s.Config)
	if err != nil {
		return err
	}
	if len(s.Steps) != len(want.Steps) {
		return fmt.Errorf("schedule: %d steps, seed %d gives %d", len(s.Steps), s.Config.Seed, len(want.Steps))
	}
	for i, st := range s.Steps {
		if lasts(st.KindOf()) && st.Length <= s.Config.TTL {
			return fmt.Errorf("schedule: step %d length %s does not outlast ttl %s", i, st.Length, s.Config.TTL)
		}
		if st != want.Steps[i] {
			return fmt.Errorf("schedule: step %d is %+v, seed %d gives %+v", i, st, s.Config.Seed, want.Steps[i])
		}
	}
	return nil
}

// Total is the schedule's wall time (gaps plus cuts).
func (s Schedule) Total() time.Duration {
	var d time.Duration
	for _, st := range s.Steps {
		d += st.Gap + st.Length
	}
	return d
}

// Marshal is the JSON a run records.
func (s Schedule) Marshal() ([]byte, error) { return json.MarshalIndent(s, "", "  ") }

// Unmarshal reads a recorded schedule and checks it replays.
func Unmarshal(b []byte) (Schedule, error) {
	var s Schedule
	if err := json.Unmarshal(b, &s); err != nil {
		return Schedule{}, fmt.Errorf("schedule: %w", err)
	}
	return s, Check(s)
}
