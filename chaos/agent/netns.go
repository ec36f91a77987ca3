//go:build linux

package agent

import (
	"net/netip"
	"sync"

	"github.com/fencecheck/fencecheck/chaos/netrules"
	"github.com/fencecheck/fencecheck/chaos/plan"
)

// LinuxNamespaces is Namespaces over the pod netns mounts in Dir, with the
// pod IP → namespace lookups cached (and re-checked before each use).
type LinuxNamespaces struct {
	Dir  string
	mu   sync.Mutex
	byIP map[netip.Addr]string
}

func (l *LinuxNamespaces) Tagged() (map[string][]plan.Route, error) {
	found, err := netrules.TaggedEverywhere(l.Dir)
	out := map[string][]plan.Route{}
	for _, f := range found {
		out[f.Path] = f.Routes
	}
	return out, err
}

func (l *LinuxNamespaces) Find(ip netip.Addr) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byIP == nil {
		l.byIP = map[netip.Addr]string{}
	}
	if p, ok := l.byIP[ip]; ok {
		if n, err := netrules.Open(p); err == nil {
			has, _ := n.HasAddr(ip)
			n.Close()
			if has {
				return p, nil
			}
		}
		delete(l.byIP, ip)
	}
	p, err := netrules.FindByIP(l.Dir, ip)
	if err != nil {
		return "", err
	}
	l.byIP[ip] = p
	return p, nil
}

func (l *LinuxNamespaces) Sync(path string, want []plan.Route) error {
	n, err := netrules.Open(path)
	if err != nil {
		return err
	}
	defer n.Close()
	_, _, err = n.Sync(want)
	return err
}
