package modelseq

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// EpochMode says how a step's epoch is found from the model's floor when
// the step runs. Epochs are symbolic so that a sequence means the same on
// a fresh sink and on one already in use, and still means something after
// shrinking has taken steps out of it.
type EpochMode uint8

const (
	Above    EpochMode = iota // floor + N (0: the floor itself)
	Below                     // floor - N, at least 0
	Nines                     // the largest number of N mod len(floor) digits (0 for none): a digit-length crossing below the floor
	Power                     // 10^(N mod len(floor)): the other side of that crossing (at most the floor)
	Fraction                  // floor * N / 2^64: anywhere below the floor
	Absolute                  // N (the range walk's way up, drawn from a floor of 0)
	SameAs                    // the epoch step N (1-based) was sent with; the floor if it did not run
)

// Epoch is a step's epoch before it is resolved.
type Epoch struct {
	Mode EpochMode
	N    uint64
}

// Edges are the epochs where a representation that is not a u64 breaks or
// a decimal rendering changes length: 0, 1, both sides of 2^7, 2^8, 2^15,
// 2^16, 2^31, 2^32, 2^53, 2^63, every power of ten from 10 to 10^19 with
// the number below it, and the top of the range, sorted.
var Edges = func() []uint64 {
	e := []uint64{0, 1, 2, math.MaxUint64 - 1, math.MaxUint64}
	for _, bits := range []uint{7, 8, 15, 16, 31, 32, 53, 63} {
		p := uint64(1) << bits
		e = append(e, p-1, p, p+1)
	}
	for p := uint64(10); ; p *= 10 {
		e = append(e, p-1, p)
		if p > math.MaxUint64/10 {
			break
		}
	}
	slices.Sort(e)
	return slices.Compact(e)
}()

// nextEdge is the first edge point above floor, or 2^64-1.
func nextEdge(floor uint64) uint64 {
	i, found := slices.BinarySearch(Edges, floor)
	if found {
		i++
	}
	if i < len(Edges) {
		return Edges[i]
	}
	return math.MaxUint64
}

func digits(v uint64) uint64 { return uint64(len(fmt.Sprint(v))) }

func pow10(d uint64) uint64 {
	p := uint64(1)
	for range d {
		p *= 10
	}
	return p
}

// mulFrac is v * n / 2^64, rounded down.
func mulFrac(v, n uint64) uint64 {
	hi, _ := bits.Mul64(v, n)
	return hi
}

// resolve is e's value on a sink whose floor is floor; sent holds the
// epochs earlier steps were sent with (by 1-based step number).
func (e Epoch) resolve(floor uint64, sent map[int]uint64) uint64 {
	switch e.Mode {
	case Above:
		if floor > math.MaxUint64-e.N {
			return math.MaxUint64
		}
		return floor + e.N
	case Below:
		return floor - min(floor, e.N)
	case Nines:
		return min(pow10(e.N%digits(floor))-1, floor)
	case Power:
		return min(pow10(e.N%digits(floor)), floor)
	case Fraction:
		return mulFrac(floor, e.N)
	case Absolute:
		return e.N
	case SameAs:
		if v, ok := sent[int(e.N)]; ok {
			return v
		}
	}
	return floor
}

func (e Epoch) String() string {
	switch e.Mode {
	case Above:
		if e.N == 0 {
			return "the floor"
		}
		return fmt.Sprintf("floor+%d", e.N)
	case Below:
		return fmt.Sprintf("floor-%d", e.N)
	case Nines:
		return "a shorter all-nines number"
	case Power:
		return "a power of ten at most the floor"
	case Fraction:
		return "far below the floor"
	case Absolute:
		return fmt.Sprint(e.N)
	case SameAs:
		return fmt.Sprintf("the epoch of step %d", e.N)
	}
	return "?"
}
