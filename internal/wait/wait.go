// Package wait is how the harness waits: Poll a condition with a deadline
// (never a sleep as synchronisation), and Hold for a length that is the
// experiment itself (a fault's length, a schedule's gap). Both targets
// and the driver use it.
package wait

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Every is how often Poll reads its condition.
const Every = 250 * time.Millisecond

// GiveUp wraps an error that makes Poll give up at once (the process it
// waits for exited, say): waiting longer cannot help.
func GiveUp(err error) error { return giveUpError{err} }

type giveUpError struct{ error }

func (e giveUpError) Unwrap() error { return e.error }

// Poll runs cond every Every until it holds or timeout ends; the error
// says what was awaited and the last error cond returned.
func Poll(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		var g giveUpError
		if errors.As(err, &g) {
			return fmt.Errorf("waiting for %s: %w", what, g.error)
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(Every):
		}
	}
}

// Hold lets d pass: the length of a fault or of a schedule's gap, which is
// what a scenario is made of, never a wait for something to happen.
func Hold(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
