package driver

import (
	"cmp"
	"slices"
	"sync"

	"github.com/fencecheck/fencecheck/conformance/scenario"
)

// RunAll runs every scenario with run, at most parallel at a time; the
// scenarios that need the whole cluster (Def.Exclusive) run after the
// others, one at a time. Each scenario has its own namespace, Lease,
// sink and witness, so the others share nothing but the nodes. RunAll
// returns when every run has returned; run must be safe to call from
// several goroutines at once.
func RunAll(parallel int, defs []scenario.Def, run func(scenario.Def)) {
	if parallel < 1 {
		parallel = 1
	}
	var shared, alone []scenario.Def
	for _, d := range defs {
		if d.Exclusive {
			alone = append(alone, d)
		} else {
			shared = append(shared, d)
		}
	}
	next := make(chan scenario.Def)
	var wg sync.WaitGroup
	for range min(parallel, len(shared)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range next {
				run(d)
			}
		}()
	}
	// Handed out in the order given, so a serial run keeps its order; in
	// parallel the longest go first (longest-processing-time first):
	// started last, a long one would run on alone at the end.
	if parallel > 1 {
		shared = longestFirst(shared)
	}
	for _, d := range shared {
		next <- d
	}
	close(next)
	wg.Wait()
	for _, d := range alone {
		run(d)
	}
}

// longestFirst is defs by WaitRank, highest first, each rank in the order
// given.
func longestFirst(defs []scenario.Def) []scenario.Def {
	out := slices.Clone(defs)
	slices.SortStableFunc(out, func(a, b scenario.Def) int { return cmp.Compare(b.WaitRank(), a.WaitRank()) })
	return out
}
