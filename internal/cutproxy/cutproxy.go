// Package cutproxy is a loopback TCP proxy that can be cut: the local
// stand-in for a partition of one process from a server (the apiserver, the
// sink) in the tests and the local conformance target.
package cutproxy

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// Proxy forwards TCP to a target until cut: then it drops every open
// connection (as a route change in a pod's netns does) and holds new ones
// unanswered until healed.
type Proxy struct {
	ln     net.Listener
	target string
	dialer net.Dialer
	mu     sync.Mutex
	cut    bool
	open   map[net.Conn]bool
	held   []net.Conn
}

// New listens on a loopback port and forwards to target (host:port).
func New(target string) (*Proxy, error) { return NewFrom(target, "") }

// NewFrom is New dialling target from the local address from (an IP such
// as 127.1.0.3; "" lets the kernel choose): the server then sees the
// proxied process at an address of its own, as a pod has its own IP.
func NewFrom(target, from string) (*Proxy, error) {
	var d net.Dialer
	if from != "" {
		ip := net.ParseIP(from)
		if ip == nil {
			return nil, fmt.Errorf("cutproxy: local address %q is not an IP", from)
		}
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, dialer: d, open: map[net.Conn]bool{}}
	go p.serve()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.held = append(p.held, c)
			p.mu.Unlock()
			continue
		}
		p.mu.Unlock()
		up, err := p.dialer.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.open[c], p.open[up] = true, true
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.open, dst)
	delete(p.open, src)
	p.mu.Unlock()
}

// Cut drops the open connections and holds new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.open {
		c.Close()
	}
}

// Heal lets connections through again; the held ones are closed, so their
// clients dial anew.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	for _, c := range p.held {
		c.Close()
	}
	p.held = nil
}

// Close stops listening and drops every connection.
func (p *Proxy) Close() { p.ln.Close(); p.Cut(); p.Heal() }
