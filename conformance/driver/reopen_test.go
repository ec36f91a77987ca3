package driver

import (
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
)

func TestNewAcquisition(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { v := t0.Add(time.Duration(s) * time.Second); return &v }
	a1 := history.LeaseRecord{Holder: "a_1", Term: 1, TermOK: true, AcquireTime: at(0)}
	renew := a1 // a renew: same holder, same acquisition
	b2 := history.LeaseRecord{Holder: "b_1", Term: 2, TermOK: true, AcquireTime: at(5)}
	deleted := history.LeaseRecord{Event: "DELETED"}
	a1Again := history.LeaseRecord{Holder: "a_1", Term: 1, TermOK: true, AcquireTime: at(9)}
	for _, c := range []struct {
		name string
		rs   []history.LeaseRecord
		seen int
		want string // holder, "" for none
	}{
		{"renews only", []history.LeaseRecord{a1, renew, renew}, 1, ""},
		{"takeover", []history.LeaseRecord{a1, renew, b2}, 1, "b_1"},
		{"takeover seen before the step is not this step's", []history.LeaseRecord{a1, b2, b2}, 2, ""},
		{"the Lease re-created by its holder", []history.LeaseRecord{a1, deleted, a1Again}, 1, "a_1"},
		{"no Lease before the step", []history.LeaseRecord{a1}, 0, "a_1"},
		{"nothing new", []history.LeaseRecord{a1}, 1, ""},
	} {
		r, ok := newAcquisition(c.rs, c.seen)
		if ok != (c.want != "") || r.Holder != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, r.Holder, ok, c.want)
		}
	}
}

func TestCommittedIn(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	acquired := t0.Add(5 * time.Second)
	acq := history.LeaseRecord{Holder: "b_1", Term: 2, TermOK: true, AcquireTime: &acquired}
	put := func(s float64, epoch uint64, result string) contract.Attempt {
		return contract.Attempt{Op: contract.OpPut, Arrived: t0.Add(time.Duration(s * float64(time.Second))), Epoch: epoch, Result: result}
	}
	for _, c := range []struct {
		name string
		acq  history.LeaseRecord
		as   []contract.Attempt
		want bool
	}{
		{"the new term's commit", acq, []contract.Attempt{put(1, 1, contract.ResultOK), put(5.2, 2, contract.ResultOK)}, true},
		{"only the old term commits", acq, []contract.Attempt{put(5.2, 1, contract.ResultOK)}, false},
		{"the new term's write refused", acq, []contract.Attempt{put(5.2, 2, contract.ResultRejectStale)}, false},
		// no term bump: the old leader's commits in the same term before
		// the acquisition are not the new leader's
		{"same term before the acquisition", history.LeaseRecord{Holder: "b_1", Term: 1, TermOK: true, AcquireTime: &acquired},
			[]contract.Attempt{put(2, 1, contract.ResultOK)}, false},
		{"no term on the Lease: any commit after it", history.LeaseRecord{Holder: "b_1", AcquireTime: &acquired},
			[]contract.Attempt{put(5.2, 7, contract.ResultOK)}, true},
		{"no acquireTime: after the step began", history.LeaseRecord{Holder: "b_1", Term: 2, TermOK: true},
			[]contract.Attempt{put(-1, 2, contract.ResultOK)}, false},
	} {
		if got := committedIn(c.acq, t0, c.as); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
