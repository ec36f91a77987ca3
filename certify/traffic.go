package certify

import (
	"hash/fnv"
	"math/rand"
	"strings"
)

// Traffic is drawn from the run's seed so that a sink cannot recognise a
// check's write by its shape (no prefix, no counter, no fixed value), and a
// failure reproduces with --seed against a fresh sink.

const (
	keyChars  = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~"
	idemChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:+/="
	hexChars  = "0123456789abcdef"
)

// checkRand is the generator of one check: the run's seed mixed with the
// check's name, so each check's traffic is fixed by the seed alone and does
// not depend on which other checks ran.
func checkRand(seed int64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewSource(seed ^ int64(h.Sum64())))
}

func randString(rng *rand.Rand, chars string, min, max int) string {
	n := min + rng.Intn(max-min+1)
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[rng.Intn(len(chars))]
	}
	return string(b)
}

// randKey is a record key: 6 to 40 URL-safe characters (never . or ..).
func randKey(rng *rand.Rand) string { return randString(rng, keyChars, 6, 40) }

// randIdem is an Idempotency-Key in one of the shapes clients use.
func randIdem(rng *rand.Rand) string {
	switch rng.Intn(3) {
	case 0: // a UUID
		h := randString(rng, hexChars, 32, 32)
		return strings.Join([]string{h[:8], h[8:12], h[12:16], h[16:20], h[20:]}, "-")
	case 1:
		return randString(rng, hexChars, 16, 64)
	}
	return randString(rng, idemChars, 8, 64)
}

// randValue is a record value: printable ASCII, 8 to 64 bytes.
func randValue(rng *rand.Rand) string {
	n := 8 + rng.Intn(57)
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0x20 + rng.Intn(0x7f-0x20))
	}
	return string(b)
}

// filler is one load request between a check's steps: a write to a key of
// its own at an epoch no higher than the floor the check started from (so
// it never moves the floor of a correct sink, nor of a broken one), a read
// of such a key, or a floor read.
type filler struct {
	kind  opKind // opPut, opGet or opFloor
	key   string
	value string
	epoch uint64
	idem  string
}

// nextFillers draws the load to send before a check's next step: 0 to 2
// requests.
func nextFillers(rng *rand.Rand, floor0 uint64, keys *[]string) []filler {
	var out []filler
	for range rng.Intn(3) {
		f := filler{kind: opPut}
		switch r := rng.Intn(10); {
		case r < 2 && len(*keys) > 0:
			f.kind, f.key = opGet, (*keys)[rng.Intn(len(*keys))]
		case r < 3:
			f.kind = opFloor
		default:
			f.key, f.value = randKey(rng), randValue(rng)
			f.epoch = floor0
			if floor0 > 0 && rng.Intn(3) == 0 {
				f.epoch = floor0 - 1 // a stale writer
			}
			if rng.Intn(2) == 0 {
				f.idem = randIdem(rng)
			}
			*keys = append(*keys, f.key)
		}
		out = append(out, f)
	}
	return out
}
