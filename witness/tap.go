package witness

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"sync"
)

// bodyTap hashes and counts the request body as the Transport reads it.
// The Transport may still be reading it from its own goroutine after
// RoundTrip returns, hence the lock.
type bodyTap struct {
	mu  sync.Mutex
	rc  io.ReadCloser
	h   hash.Hash
	n   int64
	eof bool
	err error // a read error from the client side
}

func newBodyTap(rc io.ReadCloser) *bodyTap {
	t := &bodyTap{rc: rc, h: sha256.New()}
	if rc == nil || rc == http.NoBody {
		t.rc, t.eof = http.NoBody, true
	}
	return t
}

func (t *bodyTap) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.h.Write(p[:n])
	t.n += int64(n)
	switch {
	case errors.Is(err, io.EOF):
		t.eof = true
	case err != nil && t.err == nil:
		t.err = err
	}
	return n, err
}

func (t *bodyTap) Close() error { return t.rc.Close() }

// value is what has been read so far.
func (t *bodyTap) value() value {
	t.mu.Lock()
	defer t.mu.Unlock()
	return value{n: t.n, sha256: hex.EncodeToString(t.h.Sum(nil)), partial: !t.eof}
}

// clientErr is the first error reading the body from the client.
func (t *bodyTap) clientErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// capture keeps the first answerCap bytes written through it.
type capture struct {
	buf       []byte
	truncated bool
}

func (c *capture) add(p []byte) {
	room := answerCap - len(c.buf)
	if len(p) > room {
		p, c.truncated = p[:room], true
	}
	c.buf = append(c.buf, p...)
}
