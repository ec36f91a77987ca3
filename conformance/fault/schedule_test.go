package fault

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSameSeedSameSchedule(t *testing.T) {
	c := DefaultConfig(42, 10*time.Second)
	c.Steps = 20
	a, err := Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(c)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 42 gave two schedules:\n%+v\n%+v", a, b)
	}
	c.Seed = 43
	d, _ := Generate(c)
	if reflect.DeepEqual(a.Steps, d.Steps) {
		t.Fatal("seeds 42 and 43 gave the same schedule")
	}
}

func TestBoundsHold(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		c := DefaultConfig(seed, 5*time.Second)
		c.Steps, c.FollowerPct, c.MaxBurst = 15, 50, 3
		s, err := Generate(c)
		if err != nil {
			t.Fatal(err)
		}
		run := 0
		for i, st := range s.Steps {
			if st.Length <= c.TTL || st.Multiple < c.MinMultiple-0.02 || st.Multiple > c.MaxMultiple+0.02 {
				t.Fatalf("seed %d step %d: length %s (x%.2f) outside [%.2f, %.2f] TTLs", seed, i, st.Length, st.Multiple, c.MinMultiple, c.MaxMultiple)
			}
			if i == 0 && st.Gap == 0 && c.MinGap > 0 {
				t.Fatalf("seed %d: first step has no gap", seed)
			}
			if st.Gap != 0 && (st.Gap < c.MinGap || st.Gap > c.MaxGap) {
				t.Fatalf("seed %d step %d: gap %s outside [%s, %s]", seed, i, st.Gap, c.MinGap, c.MaxGap)
			}
			if st.Gap == 0 {
				run++
			} else {
				run = 1
			}
			if run > c.MaxBurst {
				t.Fatalf("seed %d: %d cuts in a row > max_burst %d", seed, run, c.MaxBurst)
			}
			if st.Role == Follower && (st.FollowerIndex < 0 || st.FollowerIndex >= c.Followers) {
				t.Fatalf("seed %d step %d: follower index %d", seed, i, st.FollowerIndex)
			}
		}
	}
}

func TestFollowerShare(t *testing.T) {
	count := func(pct int) int {
		c := DefaultConfig(7, time.Second)
		c.Steps, c.FollowerPct = 1000, pct
		s, _ := Generate(c)
		n := 0
		for _, st := range s.Steps {
			if st.Role == Follower {
				n++
			}
		}
		return n
	}
	if n := count(0); n != 0 {
		t.Fatalf("follower_pct 0 gave %d follower cuts", n)
	}
	if n := count(100); n != 1000 {
		t.Fatalf("follower_pct 100 gave %d/1000 follower cuts", n)
	}
	if n := count(30); n < 230 || n > 370 {
		t.Fatalf("follower_pct 30 gave %d/1000 follower cuts", n)
	}
}

func TestReplayFromJSON(t *testing.T) {
	s, _ := Generate(DefaultConfig(99, 8*time.Second))
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatalf("recorded schedule does not replay: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip changed the schedule")
	}
	if !strings.Contains(string(b), `"seed": 99`) {
		t.Fatalf("seed not recorded:\n%s", b)
	}
}

// Negative controls: Check must catch a tampered or too-short schedule.
func TestCheckCatchesBrokenSchedules(t *testing.T) {
	s, _ := Generate(DefaultConfig(5, 10*time.Second))
	tampered := s
	tampered.Steps = append([]Step(nil), s.Steps...)
	tampered.Steps[1].Length += time.Second
	if err := Check(tampered); err == nil {
		t.Fatal("Check accepted a schedule whose step 1 was edited")
	}
	short := s
	short.Steps = append([]Step(nil), s.Steps...)
	short.Steps[0].Length = s.Config.TTL
	if err := Check(short); err == nil || !strings.Contains(err.Error(), "outlast") {
		t.Fatalf("Check accepted a cut no longer than the TTL: %v", err)
	}
	if err := Check(Schedule{Config: s.Config, Steps: s.Steps[:1]}); err == nil {
		t.Fatal("Check accepted a truncated schedule")
	}
	var bad Schedule
	if err := json.Unmarshal([]byte(`{"config":{"seed":1}}`), &bad); err != nil {
		t.Fatal(err)
	}
	if err := Check(bad); err == nil {
		t.Fatal("Check accepted a schedule with no TTL")
	}
}

func TestConfigErrors(t *testing.T) {
	base := DefaultConfig(1, time.Second)
	for name, mut := range map[string]func(*Config){
		"ttl":       func(c *Config) { c.TTL = 0 },
		"steps":     func(c *Config) { c.Steps = 0 },
		"min<=1":    func(c *Config) { c.MinMultiple = 1 },
		"max<min":   func(c *Config) { c.MaxMultiple = 1.2 },
		"gap":       func(c *Config) { c.MaxGap = c.MinGap - 1 },
		"burst":     func(c *Config) { c.MaxBurst = 0 },
		"pct":       func(c *Config) { c.FollowerPct = 101 },
		"followers": func(c *Config) { c.Followers = 0 },
	} {
		c := base
		mut(&c)
		if _, err := Generate(c); err == nil {
			t.Errorf("%s: Generate accepted %+v", name, c)
		}
	}
}

func TestMixedKinds(t *testing.T) {
	c := DefaultConfig(7, 4*time.Second)
	c.Steps = 40
	c.Kinds = []Weight{{Partition, 3}, {PodDelete, 1}, {LeaseDelete, 1}, {RollingRestart, 1}}
	s, err := Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	got := map[Kind]int{}
	for _, st := range s.Steps {
		got[st.KindOf()]++
		if st.KindOf() == Partition && st.Length <= c.TTL {
			t.Fatalf("step %d: a partition of %v does not outlast the TTL", st.Index, st.Length)
		}
		if st.KindOf() != Partition && (st.Length != 0 || st.Role != Leader) {
			t.Fatalf("step %d: %s acts on the leader at once, got %+v", st.Index, st.Kind, st)
		}
	}
	for _, w := range c.Kinds {
		if got[w.Kind] == 0 {
			t.Errorf("40 steps and no %s: %v", w.Kind, got)
		}
	}
	// Replayable: the recorded JSON checks against its own seed, and an
	// edited kind is caught.
	b, _ := s.Marshal()
	if _, err := Unmarshal(b); err != nil {
		t.Fatalf("replay: %v", err)
	}
	orig := s.Steps[0].Kind
	s.Steps[0].Kind = PodDelete
	if orig == PodDelete {
		s.Steps[0].Kind = LeaseDelete
	}
	if err := Check(s); err == nil {
		t.Fatal("an edited kind passed the replay check")
	}
	// A config without kinds is the partition-only generator, unchanged.
	c.Kinds = nil
	p, _ := Generate(c)
	for _, st := range p.Steps {
		if st.Kind != "" || st.Label() != "partition-"+string(st.Role) {
			t.Fatalf("partition-only schedule has step %+v", st)
		}
	}
}

func TestKindsValidated(t *testing.T) {
	c := DefaultConfig(1, time.Second)
	for _, ks := range [][]Weight{{{"", 1}}, {{PodDelete, 0}}, {{PodDelete, 1}, {PodDelete, 2}}} {
		c.Kinds = ks
		if _, err := Generate(c); err == nil {
			t.Errorf("kinds %v accepted", ks)
		}
	}
}

// allKinds is every kind the mixed scenarios draw (Mixed() has the same
// set).
var allKinds = []Weight{{Partition, 3}, {PodDelete, 1}, {LeaseDelete, 1}, {RollingRestart, 1},
	{Pause, 1}, {HeldWrites, 1}, {LostAnswers, 1}, {SinkCrash, 1}}

// With EveryKind, every seed's schedule has every kind (the new ones
// included) in its first len(Kinds) steps, and replays from its JSON: the
// same seed gives the same schedule, an edited kind or length is caught.
func TestEveryKindReplays(t *testing.T) {
	orders := map[string]bool{}
	for seed := uint64(0); seed < 100; seed++ {
		c := DefaultConfig(seed, 4*time.Second)
		c.Kinds, c.EveryKind, c.Steps = allKinds, true, len(allKinds)+2
		s, err := Generate(c)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Generate(c)
		if !reflect.DeepEqual(s, again) {
			t.Fatalf("seed %d gave two schedules", seed)
		}
		got := map[Kind]int{}
		order := ""
		for i, st := range s.Steps {
			if i < len(allKinds) {
				got[st.KindOf()]++
				order += string(st.KindOf()) + ","
			}
			switch {
			case lasts(st.KindOf()) && (st.Length <= c.TTL || st.Multiple < c.MinMultiple-0.02 || st.Multiple > c.MaxMultiple+0.02):
				t.Fatalf("seed %d step %d: %s of %v (x%.2f) outside [%.2f, %.2f] TTLs", seed, i, st.Kind, st.Length, st.Multiple, c.MinMultiple, c.MaxMultiple)
			case !lasts(st.KindOf()) && st.Length != 0:
				t.Fatalf("seed %d step %d: %s acts at once, got length %v", seed, i, st.Kind, st.Length)
			case st.KindOf() != Partition && st.Role != Leader:
				t.Fatalf("seed %d step %d: %s targets the leader, got %s", seed, i, st.Kind, st.Role)
			}
		}
		for _, w := range allKinds {
			if got[w.Kind] != 1 {
				t.Fatalf("seed %d: %s %d times in the first %d steps: %v", seed, w.Kind, got[w.Kind], len(allKinds), got)
			}
		}
		orders[order] = true
		b, _ := s.Marshal()
		back, err := Unmarshal(b)
		if err != nil || !reflect.DeepEqual(back, s) {
			t.Fatalf("seed %d: the recorded schedule does not replay: %v\n%s", seed, err, b)
		}
		if !strings.Contains(string(b), `"every_kind": true`) {
			t.Fatalf("seed %d: every_kind not recorded:\n%s", seed, b)
		}
		for i, st := range s.Steps {
			if st.KindOf() == SinkCrash {
				edited := s
				edited.Steps = append([]Step(nil), s.Steps...)
				edited.Steps[i].Kind = Pause // same shape (a length), another kind
				if err := Check(edited); err == nil {
					t.Fatalf("seed %d: a sink crash edited into a pause passed the replay check", seed)
				}
			}
		}
	}
	if len(orders) < 50 {
		t.Errorf("100 seeds gave only %d orders of the kinds", len(orders))
	}
	c := DefaultConfig(1, time.Second)
	c.Kinds, c.EveryKind, c.Steps = allKinds, true, len(allKinds)-1
	if _, err := Generate(c); err == nil || !strings.Contains(err.Error(), "every_kind") {
		t.Fatalf("every_kind with fewer steps than kinds: %v", err)
	}
	c.Kinds = nil
	if _, err := Generate(c); err == nil {
		t.Fatal("every_kind without kinds accepted")
	}
}

// Weighted draws reach the new kinds too, each shaped as its kind says.
func TestMixedDrawsNewKinds(t *testing.T) {
	c := DefaultConfig(3, 4*time.Second)
	c.Kinds, c.Steps = allKinds, 200
	s, err := Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	got := map[Kind]int{}
	for _, st := range s.Steps {
		got[st.KindOf()]++
	}
	for _, w := range allKinds {
		if got[w.Kind] == 0 {
			t.Errorf("200 steps and no %s: %v", w.Kind, got)
		}
	}
}
