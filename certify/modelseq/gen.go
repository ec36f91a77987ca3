// Package modelseq draws sequences of sink contract operations (fence,
// put, put retried, get, floor read) from a seed, runs them against a sink
// one at a time, checks every answer field by field against the contract's
// sequential model (fencemodel.Expect), and shrinks a sequence that fails
// to a short list of its steps that still fails: the reproducer certify
// prints as `--seed S --steps LIST`.
//
// A sequence is data: steps with symbolic epochs (the floor, 3 below it,
// the next representation edge above it, ...) resolved against the
// model's floor as they run, and names (record keys, values,
// Idempotency-Keys) by index, bound to fresh strings for each run. So one
// sequence means the same on a fresh sink and on one already in use, a
// replay needs no reset (but for the whole-range walk, whose epochs are
// absolute), and taking steps out of it leaves a sequence that still means
// something. This package does no I/O: the caller's Sink sends requests.
package modelseq

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand"

	"github.com/fencecheck/fencecheck/fencemodel"
)

// Step is one operation of a sequence.
type Step struct {
	Kind  fencemodel.Kind
	Key   int   // Put, Get: index of the record key
	Value int   // Put: index of the value
	Idem  int   // Put: index of the Idempotency-Key, -1 for none
	Epoch Epoch // Put, Fence
	Note  string
	// Of is the step a retry sends again (0 for none): a run without it
	// says so, the retry being the write's first send there.
	Of int
}

// Sequence is what a generator drew from a seed.
type Sequence struct {
	Gen   string
	Seed  int64
	Steps []Step
	// Keys, Values and Idems count the names the steps use.
	Keys, Values, Idems int
}

// The generators, one per profile that runs sequences.
const (
	// Fencing: fences, writes, reads and floor reads at epochs around
	// the floor, and a sweep of every digit-length crossing below it. No
	// Idempotency-Keys (the core profile).
	Fencing = "fencing"
	// Retries: writes with Idempotency-Keys and their retries, each
	// differing in one allowed way: at a later epoch after a takeover, at
	// a lower one, with another value or record key, after a refusal.
	Retries = "retries"
	// Range: a walk from the floor to 2^64-1 through every edge point,
	// with writes at and below the floor, digit-length crossings and
	// far-below epochs between. It raises the floor for ever.
	Range = "range"
)

// Generators lists the generators.
var Generators = []string{Fencing, Retries, Range}

// DefaultSteps is a generator's sequence length when Generate is asked
// for 0 steps (Range: until the walk reaches 2^64-1, then rangeTail more).
var DefaultSteps = map[string]int{Fencing: 100, Retries: 80, Range: 0}

const (
	numKeys   = 4
	numValues = 8
	rangeTail = 12
)

type gen struct {
	rng   *rand.Rand
	steps []Step
	keyed []int // step numbers of fresh keyed puts
	idems int
	floor uint64 // Range: the floor of a correct sink that started at 0
	sweep int    // Fencing: where the crossing sweep goes
}

// Generate draws n steps (0: the generator's default) from seed. The
// same generator and seed always give the same steps, and fewer steps are
// a prefix of more.
func Generate(name string, seed int64, n int) (Sequence, error) {
	h := fnv.New64a()
	h.Write([]byte(name))
	g := &gen{rng: rand.New(rand.NewSource(seed ^ int64(h.Sum64())))}
	var next func()
	switch name {
	case Fencing:
		g.sweep = 8 + g.rng.Intn(16)
		next = g.fencing
	case Retries:
		next = g.retries
	case Range:
		next = g.walk
	default:
		return Sequence{}, fmt.Errorf("unknown generator %q (known: %v)", name, Generators)
	}
	if n <= 0 {
		n = DefaultSteps[name]
	}
	topAt := -1
	for {
		if n > 0 && len(g.steps) >= n {
			break
		}
		if n <= 0 && topAt >= 0 && len(g.steps) >= topAt+rangeTail {
			break
		}
		next()
		if topAt < 0 && g.floor == math.MaxUint64 {
			topAt = len(g.steps)
		}
	}
	if n > 0 {
		g.steps = g.steps[:n]
	} else {
		g.steps = g.steps[:topAt+rangeTail]
	}
	return Sequence{Gen: name, Seed: seed, Steps: g.steps, Keys: numKeys, Values: numValues, Idems: g.idems}, nil
}

func (g *gen) add(s Step) int {
	if s.Kind != fencemodel.Put {
		s.Idem = -1
	}
	g.steps = append(g.steps, s)
	g.track(s)
	return len(g.steps)
}

// track follows the floor of a correct sink that started at 0, through
// the range walk's absolute epochs.
func (g *gen) track(s Step) {
	if (s.Kind == fencemodel.Put || s.Kind == fencemodel.Fence) && s.Epoch.Mode == Absolute && s.Idem < 0 {
		g.floor = max(g.floor, s.Epoch.N)
	}
}

func (g *gen) key() int    { return g.rng.Intn(numKeys) }
func (g *gen) value() int  { return g.rng.Intn(numValues) }
func (g *gen) n64() uint64 { return g.rng.Uint64() }

func (g *gen) put(e Epoch, idem int, note string) int {
	return g.add(Step{Kind: fencemodel.Put, Key: g.key(), Value: g.value(), Idem: idem, Epoch: e, Note: note})
}

func (g *gen) fence(e Epoch, note string) int {
	return g.add(Step{Kind: fencemodel.Fence, Epoch: e, Note: note})
}

func (g *gen) read() {
	if g.rng.Intn(3) == 0 {
		g.add(Step{Kind: fencemodel.Floor})
		return
	}
	g.add(Step{Kind: fencemodel.Get, Key: g.key()})
}

// below is an epoch at most the floor, of one of the shapes that break a
// sink that compares epochs wrongly.
func (g *gen) below() (Epoch, string) {
	switch g.rng.Intn(8) {
	case 0, 1, 2:
		return Epoch{Below, 1 + uint64(g.rng.Intn(3))}, "a stale leader"
	case 3:
		return Epoch{Nines, g.n64()}, "a stale leader, fewer digits"
	case 4:
		return Epoch{Power, g.n64()}, "a stale leader, a power of ten"
	case 5:
		return Epoch{Fraction, g.n64()}, "a leader far below the floor"
	}
	return Epoch{Absolute, uint64(g.rng.Intn(2))}, "the first leaders"
}

func (g *gen) fencing() {
	if len(g.steps) == g.sweep {
		// every digit-length crossing below the floor, both sides
		for n := range uint64(20) {
			g.add(Step{Kind: fencemodel.Put, Key: g.key(), Value: g.value(), Idem: -1, Epoch: Epoch{Nines, n}, Note: "crossing sweep"})
			g.add(Step{Kind: fencemodel.Put, Key: g.key(), Value: g.value(), Idem: -1, Epoch: Epoch{Power, n}, Note: "crossing sweep"})
		}
		return
	}
	switch r := g.rng.Intn(100); {
	case r < 30:
		g.put(Epoch{Above, uint64(g.rng.Intn(3))}, -1, "the leader writes")
	case r < 40:
		g.fence(Epoch{Above, 1 + uint64(g.rng.Intn(3))}, "a takeover")
	case r < 43:
		g.fence(Epoch{Above, 0}, "a repeated barrier")
	case r < 65:
		e, why := g.below()
		g.put(e, -1, why)
	case r < 70:
		e, why := g.below()
		g.fence(e, why)
	default:
		g.read()
	}
}

func (g *gen) freshIdem() int {
	g.idems++
	return g.idems - 1
}

func (g *gen) retries() {
	switch r := g.rng.Intn(100); {
	case r < 22 || len(g.keyed) == 0:
		g.keyed = append(g.keyed, g.put(Epoch{Above, uint64(g.rng.Intn(3))}, g.freshIdem(), "a keyed write"))
	case r < 30:
		e, why := g.below()
		g.keyed = append(g.keyed, g.put(e, g.freshIdem(), "a keyed write by "+why))
	case r < 62:
		g.retry()
	case r < 67:
		g.put(Epoch{Above, uint64(g.rng.Intn(2))}, -1, "a write without a key")
	case r < 74:
		g.fence(Epoch{Above, 1 + uint64(g.rng.Intn(2))}, "a takeover")
	case r < 77:
		e, why := g.below()
		g.fence(e, why)
	default:
		g.read()
	}
}

// retry sends an earlier keyed write again, differing in one allowed way.
func (g *gen) retry() {
	orig := g.keyed[g.rng.Intn(len(g.keyed))]
	o := g.steps[orig-1]
	s := Step{Kind: fencemodel.Put, Key: o.Key, Value: o.Value, Idem: o.Idem, Epoch: Epoch{SameAs, uint64(orig)}, Of: orig}
	switch g.rng.Intn(7) {
	case 0:
		s.Note = fmt.Sprintf("retry of step %d", orig)
	case 1, 2:
		g.fence(Epoch{Above, 1 + uint64(g.rng.Intn(3))}, "a takeover")
		if g.rng.Intn(2) == 0 {
			s.Note = fmt.Sprintf("retry of step %d after a takeover, at its epoch", orig)
		} else {
			s.Epoch, s.Note = Epoch{Above, 0}, fmt.Sprintf("retry of step %d after a takeover, at the new epoch", orig)
		}
	case 3:
		s.Epoch, s.Note = Epoch{Above, 1 + uint64(g.rng.Intn(2))}, fmt.Sprintf("retry of step %d at a later epoch", orig)
	case 4:
		s.Epoch, _ = g.below()
		s.Note = fmt.Sprintf("retry of step %d at a lower epoch", orig)
	case 5:
		s.Value, s.Note = (o.Value+1+g.rng.Intn(numValues-1))%numValues, fmt.Sprintf("step %d's key with another value", orig)
	default:
		s.Key, s.Note = (o.Key+1+g.rng.Intn(numKeys-1))%numKeys, fmt.Sprintf("step %d's key for another record", orig)
	}
	g.add(s)
}

// walk is one step of the Range generator: up to the next edge point (or
// short of it), or a probe at or below the floor. The way up is absolute,
// drawn from a floor of 0: a replay on a fresh sink climbs the same way,
// and a reproducer needs none of the steps below its edge. On a sink whose
// floor is higher, the steps below it are stale writes far below.
func (g *gen) walk() {
	switch r := g.rng.Intn(100); {
	case r < 40:
		next := nextEdge(g.floor)
		e, why := Epoch{Absolute, next}, "up to the next edge"
		if gap := next - g.floor; gap > 2 && g.rng.Intn(4) == 0 {
			e, why = Epoch{Absolute, g.floor + 1 + mulFrac(gap-2, g.n64())}, "far above, short of the next edge"
		}
		if g.rng.Intn(2) == 0 {
			g.fence(e, why)
		} else {
			g.put(e, -1, why)
		}
	case r < 50:
		g.put(Epoch{Above, 0}, -1, "the leader writes")
	case r < 54:
		g.fence(Epoch{Above, 0}, "a repeated barrier")
	case r < 86:
		e, why := g.below()
		if g.rng.Intn(8) == 0 {
			g.fence(e, why)
		} else {
			g.put(e, -1, why)
		}
	default:
		g.read()
	}
}
