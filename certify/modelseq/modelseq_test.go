package modelseq

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/fencemodel"
)

// fakeSink is the model as a sink, with a defect when asked: conv is how
// it keeps an epoch (identity for a correct sink), mutate changes its
// answer.
type fakeSink struct {
	st     fencemodel.State
	conv   func(uint64) uint64
	mutate func(r Request, out fencemodel.Output) fencemodel.Output
	sent   []uint64
}

func newFake(floor uint64) *fakeSink { return &fakeSink{st: fencemodel.Start(floor)} }

func (f *fakeSink) Do(_ context.Context, r Request) Answer {
	in := fencemodel.Input{Kind: r.Kind, Key: r.Key, Value: r.Value, Epoch: r.Epoch, Idem: r.Idem}
	if r.Kind == fencemodel.Put || r.Kind == fencemodel.Fence {
		f.sent = append(f.sent, r.Epoch)
		if f.conv != nil {
			in.Epoch = f.conv(in.Epoch)
		}
	}
	out, next := fencemodel.Expect(f.st, in)
	if f.mutate != nil {
		out = f.mutate(r, out)
	}
	f.st = next
	return Answer{Out: out, Text: Render(in, out)}
}

func names(seq Sequence, salt string) func(uint64) Names {
	return func(uint64) Names { return namesOf(seq, salt) }
}

func namesOf(seq Sequence, salt string) Names {
	var n Names
	for i := range seq.Keys {
		n.Keys = append(n.Keys, fmt.Sprintf("k%d%s", i, salt))
	}
	for i := range seq.Values {
		n.Values = append(n.Values, fmt.Sprintf("v%d", i))
	}
	for i := range seq.Idems {
		n.Idems = append(n.Idems, fmt.Sprintf("i%d%s", i, salt))
	}
	return n
}

func draw(t *testing.T, name string, seed int64, n int) Sequence {
	t.Helper()
	seq, err := Generate(name, seed, n)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func TestGenerateIsSeededAndPrefixStable(t *testing.T) {
	for _, g := range Generators {
		a, b := draw(t, g, 7, 0), draw(t, g, 7, 0)
		if !slices.Equal(a.Steps, b.Steps) {
			t.Errorf("%s: the same seed gave different steps", g)
		}
		if c := draw(t, g, 8, 0); slices.Equal(a.Steps, c.Steps) {
			t.Errorf("%s: seeds 7 and 8 gave the same steps", g)
		}
		short := draw(t, g, 7, 10)
		if len(short.Steps) != 10 || !slices.Equal(short.Steps, a.Steps[:10]) {
			t.Errorf("%s: 10 steps are not the first 10 of the default", g)
		}
	}
	if _, err := Generate("nope", 1, 0); err == nil {
		t.Error("an unknown generator was accepted")
	}
}

// On a sink that follows the contract every generator's sequences run
// clean, from a fresh sink and from floors already in use.
func TestCorrectSinkPasses(t *testing.T) {
	for _, g := range Generators {
		for _, floor := range []uint64{0, 5000, 1 << 40} {
			for seed := int64(1); seed <= 20; seed++ {
				seq := draw(t, g, seed, 0)
				o := Run(context.Background(), newFake(floor), seq, All(seq), names(seq, ""))
				if o.Err != nil || o.Failed || len(o.Lines) != len(seq.Steps) {
					last := o.Lines[len(o.Lines)-1]
					t.Fatalf("%s seed %d floor %d: err %v failed %v at step %d: %s -> %s, want %s", g, seed, floor, o.Err, o.Failed, last.Step, last.Request, last.Answer, last.Want)
				}
			}
		}
	}
}

// The walk sends every edge point, from a fresh sink, and ends at the top.
func TestRangeWalkVisitsEveryEdge(t *testing.T) {
	for seed := int64(1); seed <= 10; seed++ {
		seq := draw(t, Range, seed, 0)
		f := newFake(0)
		if o := Run(context.Background(), f, seq, All(seq), names(seq, "")); o.Failed || o.Err != nil {
			t.Fatalf("seed %d: %+v", seed, o)
		}
		for _, e := range Edges {
			if !slices.Contains(f.sent, e) {
				t.Errorf("seed %d: edge %d never sent", seed, e)
			}
		}
		if f.st.Floor != math.MaxUint64 {
			t.Errorf("seed %d: the walk ended at floor %d", seed, f.st.Floor)
		}
	}
}

// The fencing sequences send both sides of every digit-length crossing
// below the floor, whatever the floor.
func TestFencingSweepsEveryCrossingBelowTheFloor(t *testing.T) {
	for _, floor := range []uint64{5000, 1 << 40, math.MaxUint64 / 3} {
		seq := draw(t, Fencing, 3, 0)
		f := newFake(floor)
		if o := Run(context.Background(), f, seq, All(seq), names(seq, "")); o.Failed || o.Err != nil {
			t.Fatalf("floor %d: %+v", floor, o)
		}
		for d := uint64(0); d < digits(floor); d++ {
			if !slices.Contains(f.sent, pow10(d)-1) || !slices.Contains(f.sent, pow10(d)) {
				t.Errorf("floor %d: the crossing at 10^%d not sent both sides", floor, d)
			}
		}
	}
}

func viaFloat64(e uint64) uint64 {
	if f := float64(e); f < math.Exp2(64) {
		return uint64(f)
	}
	return math.MaxUint64
}

// Each defect is caught, and shrinks to a reproducer of a few steps that
// still fails when replayed on its own.
func TestDefectsAreCaughtAndShrunk(t *testing.T) {
	cases := []struct {
		name   string
		gen    string
		fresh  bool // replays need a fresh sink (the range walk)
		defect func(f *fakeSink)
		most   int // steps in the shrunk reproducer, at most
	}{
		{"epochs kept as float64", Range, true, func(f *fakeSink) { f.conv = viaFloat64 }, 3},
		{"OK_DUP with the retry's epoch", Retries, false, func(f *fakeSink) {
			f.mutate = func(r Request, out fencemodel.Output) fencemodel.Output {
				if out.Result == contract.ResultOKDup {
					out.Epoch = r.Epoch
				}
				return out
			}
		}, 3},
		{"409 names the request's epoch", Fencing, false, func(f *fakeSink) {
			f.mutate = func(r Request, out fencemodel.Output) fencemodel.Output {
				if out.Status == contract.StatusConflict {
					out.Highest = r.Epoch
				}
				return out
			}
		}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sink := newFake(0)
			c.defect(sink)
			var caught Outcome
			seed := int64(1)
			for ; seed <= 5; seed++ {
				seq := draw(t, c.gen, seed, 0)
				if o := Run(context.Background(), sink, seq, All(seq), names(seq, fmt.Sprint(seed))); o.Failed {
					caught = o
					break
				}
			}
			if !caught.Failed {
				t.Fatal("not caught in 5 sequences")
			}
			seq := draw(t, c.gen, seed, 0)
			salt := 0
			replay := func(ctx context.Context, steps []int) Outcome {
				salt++
				s := sink
				if c.fresh {
					s = newFake(0)
					c.defect(s)
				}
				return Run(ctx, s, seq, steps, names(seq, fmt.Sprintf("r%d", salt)))
			}
			sh := Shrink(context.Background(), caught, replay, Budget{Runs: 500})
			t.Logf("caught at step %d, shrunk to %s (%d replays, minimal %v)", caught.Lines[len(caught.Lines)-1].Step, FormatSteps(sh.Steps), sh.Runs, sh.Minimal)
			if len(sh.Steps) > c.most || !sh.Minimal {
				t.Errorf("shrunk to %d steps (%s), minimal %v; want at most %d", len(sh.Steps), FormatSteps(sh.Steps), sh.Minimal, c.most)
			}
			if o := replay(context.Background(), sh.Steps); !o.Failed {
				t.Errorf("the reproducer %s does not fail on replay", FormatSteps(sh.Steps))
			}
		})
	}
}

func TestShrinkKeepsToItsBudget(t *testing.T) {
	seq := draw(t, Fencing, 1, 0)
	failing := Outcome{Failed: true}
	for i := range 50 {
		failing.Lines = append(failing.Lines, Line{Step: i + 1})
	}
	runs := 0
	sh := Shrink(context.Background(), failing, func(_ context.Context, steps []int) Outcome {
		runs++
		o := Outcome{Failed: slices.Contains(steps, 50) && slices.Contains(steps, 7)}
		for _, s := range steps {
			o.Lines = append(o.Lines, Line{Step: s})
		}
		return o
	}, Budget{Runs: 1000})
	if !slices.Equal(sh.Steps, []int{7, 50}) || !sh.Minimal || runs != sh.Runs {
		t.Errorf("got %v minimal %v after %d runs (%d counted)", sh.Steps, sh.Minimal, runs, sh.Runs)
	}
	runs = 0
	sh = Shrink(context.Background(), failing, func(context.Context, []int) Outcome { runs++; return Outcome{} }, Budget{Runs: 5})
	if runs != 5 || sh.Minimal || len(sh.Steps) != 50 {
		t.Errorf("budget of 5: %d runs, minimal %v, %d steps", runs, sh.Minimal, len(sh.Steps))
	}
	_ = seq
}

func TestStepsFormat(t *testing.T) {
	for _, c := range []struct {
		steps []int
		text  string
	}{{[]int{1, 2, 3, 7, 9, 10}, "1-3,7,9-10"}, {[]int{17}, "17"}, {[]int{1, 2}, "1-2"}} {
		if got := FormatSteps(c.steps); got != c.text {
			t.Errorf("FormatSteps(%v) = %q, want %q", c.steps, got, c.text)
		}
		if got, err := ParseSteps(c.text); err != nil || !slices.Equal(got, c.steps) {
			t.Errorf("ParseSteps(%q) = %v %v", c.text, got, err)
		}
	}
	for _, bad := range []string{"", "0", "x", "3-1", "2,1", "1,1", "-3", "1-", "1-99999999"} {
		if _, err := ParseSteps(bad); err == nil {
			t.Errorf("ParseSteps(%q) accepted", bad)
		}
	}
}

func TestResolve(t *testing.T) {
	max := uint64(math.MaxUint64)
	for _, c := range []struct {
		e     Epoch
		floor uint64
		want  uint64
	}{
		{Epoch{Above, 2}, max - 1, max},
		{Epoch{Below, 3}, 2, 0},
		{Epoch{Nines, 1}, 5000, 9},
		{Epoch{Nines, 3}, 5000, 999},
		{Epoch{Nines, 4}, 5000, 0}, // 4 mod 4 digits
		{Epoch{Power, 3}, 5000, 1000},
		{Epoch{Power, 0}, 0, 0},
		{Epoch{Fraction, 1 << 63}, 5000, 2500},
	} {
		if got := c.e.resolve(c.floor, nil); got != c.want {
			t.Errorf("%v (%s) at floor %d = %d, want %d", c.e, c.e, c.floor, got, c.want)
		}
	}
	for _, c := range [][2]uint64{{9, 10}, {1 << 53, 1<<53 + 1}, {max - 1, max}, {max, max}, {200, 255}} {
		if got := nextEdge(c[0]); got != c[1] {
			t.Errorf("nextEdge(%d) = %d, want %d", c[0], got, c[1])
		}
	}
	if got := (Epoch{SameAs, 4}).resolve(9, map[int]uint64{4: 3}); got != 3 {
		t.Errorf("SameAs = %d", got)
	}
	if got := (Epoch{SameAs, 5}).resolve(9, map[int]uint64{4: 3}); got != 9 {
		t.Errorf("SameAs of a step not run = %d, want the floor", got)
	}
}
