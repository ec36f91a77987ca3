package modelseq

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Budget bounds a shrink: at most Runs replays, none started after
// Until (zero: no deadline).
type Budget struct {
	Runs  int
	Until time.Time
}

// Shrunk is the result of a shrink.
type Shrunk struct {
	Steps []int   // the shortest failing list found
	Last  Outcome // the run of Steps that failed
	Runs  int     // replays made
	// Minimal: no single step of Steps can be left out and the rest
	// still fail (when the budget ran out first, Steps is shorter than the
	// failing run, but maybe not minimal).
	Minimal bool
}

// Shrink looks for a short list of steps that still fails, starting from
// failed, a run that failed (its steps end at the failing one, so it is
// already the shortest failing prefix). replay runs a list of steps (with
// fresh names, against a sink in the state the caller guarantees). It
// takes out chunks of steps, halving their size when none can go (ddmin),
// and cuts every candidate that fails after its failing step. Any answer
// that is not the model's counts as failing: each is a contract violation.
func Shrink(ctx context.Context, failed Outcome, replay func(context.Context, []int) Outcome, b Budget) Shrunk {
	best := Shrunk{Steps: failed.Steps(), Last: failed}
	spent := func() bool {
		return b.Runs > 0 && best.Runs >= b.Runs || !b.Until.IsZero() && time.Now().After(b.Until) || ctx.Err() != nil
	}
	parts := 2
	for len(best.Steps) > 1 && !spent() {
		cur := best.Steps
		chunk := (len(cur) + parts - 1) / parts
		removed := false
		for start := 0; start < len(cur) && !removed && !spent(); start += chunk {
			cand := slices.Concat(cur[:start], cur[min(start+chunk, len(cur)):])
			best.Runs++
			if o := replay(ctx, cand); o.Failed {
				best.Steps, best.Last, removed = o.Steps(), o, true
				parts = max(parts-1, 2)
			}
		}
		switch {
		case removed:
		case chunk == 1 && !spent():
			best.Minimal = true
			return best
		default:
			parts = min(parts*2, len(cur))
		}
	}
	best.Minimal = best.Minimal || len(best.Steps) == 1
	return best
}

// FormatSteps writes step numbers as `--steps` takes them: ascending
// runs as ranges, "1-12,15,40-41".
func FormatSteps(steps []int) string {
	var b strings.Builder
	for i := 0; i < len(steps); {
		j := i
		for j+1 < len(steps) && steps[j+1] == steps[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		switch {
		case j == i:
			fmt.Fprintf(&b, "%d", steps[i])
		default:
			fmt.Fprintf(&b, "%d-%d", steps[i], steps[j])
		}
		i = j + 1
	}
	return b.String()
}

// ParseSteps reads a `--steps` list: step numbers and ranges of them,
// comma-separated, each number from 1, in ascending order ("17" is step
// 17 alone; the first 17 steps are "1-17").
func ParseSteps(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 1 {
			return nil, fmt.Errorf("--steps %q: %q is not a step number (1, 2, ...) or a range of them (3-9)", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("--steps %q: %q is not a range of step numbers (3-9)", s, part)
			}
		}
		if len(out) > 0 && a <= out[len(out)-1] {
			return nil, fmt.Errorf("--steps %q: step numbers must ascend", s)
		}
		if b-a > 1_000_000 {
			return nil, fmt.Errorf("--steps %q: %q is too long a range", s, part)
		}
		for n := a; n <= b; n++ {
			out = append(out, n)
		}
	}
	return out, nil
}
