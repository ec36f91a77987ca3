package cutproxy

import (
	"io"
	"net"
	"strings"
	"testing"
)

// The server sees a NewFrom proxy's connections from the address it was
// given: the local target's stand-in for a pod's own IP.
func TestNewFromDialsFromItsAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		peer <- c.RemoteAddr().String()
		_, _ = c.Write([]byte("hi"))
		c.Close()
	}()
	p, err := NewFrom(ln.Addr().String(), "127.1.0.7")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if b, _ := io.ReadAll(c); string(b) != "hi" {
		t.Errorf("read %q through the proxy", b)
	}
	if got := <-peer; !strings.HasPrefix(got, "127.1.0.7:") {
		t.Errorf("the server saw %s, want 127.1.0.7:*", got)
	}
	if _, err := NewFrom("127.0.0.1:1", "not-an-ip"); err == nil {
		t.Error("a bad local address was accepted")
	}
}
