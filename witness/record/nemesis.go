package record

import "time"

// Fault is what the witness's nemesis did to one operation (nil on an
// operation it left alone). The witness is the network between the
// reconcilers and the sink; these are its faults, recorded by itself.
type Fault struct {
	// Held: the witness kept this write from the sink (a write held in
	// flight); HoldEpoch is the epoch E at or below which it held writes.
	Held      bool   `json:"held,omitempty"`
	HoldEpoch uint64 `json:"hold_epoch,omitempty"`
	// ReleasedBy is the id of the fence operation whose arrival released
	// the write; ReleasedBeforeFence says it was sent upstream before that
	// fence was (the race mode), not after the sink answered it.
	ReleasedBy          uint64 `json:"released_by,omitempty"`
	ReleasedBeforeFence bool   `json:"released_before_fence,omitempty"`
	// Expired: no fence released the write within the hold limit, so the
	// witness sent it anyway (the fault did not take effect).
	Expired bool `json:"expired,omitempty"`
	// Releases, on a fence, are the ids of the held writes it released.
	Releases []uint64 `json:"releases,omitempty"`
	// Sent and Answered are when the witness sent the request upstream and
	// read the upstream's whole answer: the sink acted inside them, a
	// narrower interval than the client's Invoked..Completed when the
	// witness held the request or held back its answer.
	Sent     time.Time `json:"sent,omitzero"`
	Answered time.Time `json:"answered,omitzero"`
	// LostAnswer: the sink answered 2xx (Type ok: it took effect) and the
	// witness closed the client's connection instead of passing it back.
	LostAnswer bool `json:"lost_answer,omitempty"`
	// Delayed is how long the witness held the sink's answer back before
	// passing it on (a slow sink, SlowRequest).
	Delayed time.Duration `json:"delayed_ns,omitempty"`
}
