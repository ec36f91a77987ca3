//go:build linux

// Package netrules is the netlink I/O of the built-in executor: it installs
// and removes partition routes inside a pod's network namespace. Every
// route it writes carries the route protocol Protocol, so leftovers from a
// crashed agent are found (and removed) by that tag alone.
package netrules

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"

	"github.com/fencecheck/fencecheck/chaos/plan"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Protocol tags our routes (`ip route show proto 147`). 147 is not assigned
// in iproute2's rt_protos, so no routing daemon writes it.
const Protocol netlink.RouteProtocol = 147

// DefaultDir is where containerd's CRI bind-mounts pod network namespaces.
const DefaultDir = "/var/run/netns"

// NS is an open handle on one network namespace. Opening one enters the
// namespace briefly (setns), which needs CAP_SYS_ADMIN.
type NS struct {
	Path string
	h    *netlink.Handle
}

// Open opens the network namespace bind-mounted at path.
func Open(path string) (*NS, error) {
	fd, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("open netns %s: %w", path, err)
	}
	defer fd.Close()
	h, err := netlink.NewHandleAt(fd)
	if err != nil {
		return nil, fmt.Errorf("netlink in netns %s: %w", path, err)
	}
	return &NS{Path: path, h: h}, nil
}

// Close releases the netlink socket.
func (n *NS) Close() { n.h.Close() }

// HasAddr reports whether an interface in the namespace holds ip.
func (n *NS) HasAddr(ip netip.Addr) (bool, error) {
	addrs, err := n.h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return false, fmt.Errorf("list addresses in %s: %w", n.Path, err)
	}
	for _, a := range addrs {
		if got, ok := netip.AddrFromSlice(a.IP); ok && got.Unmap() == ip.Unmap() {
			return true, nil
		}
	}
	return false, nil
}

var typeOf = map[plan.RouteType]int{plan.Blackhole: unix.RTN_BLACKHOLE, plan.Prohibit: unix.RTN_PROHIBIT}

func toNetlink(r plan.Route) (*netlink.Route, error) {
	typ, ok := typeOf[r.Type]
	if !ok {
		return nil, fmt.Errorf("route type %q unknown", r.Type)
	}
	ip := net.IP(r.Dst.Addr().AsSlice())
	return &netlink.Route{
		Dst:      &net.IPNet{IP: ip, Mask: net.CIDRMask(r.Dst.Bits(), r.Dst.Addr().BitLen())},
		Type:     typ,
		Protocol: Protocol,
		Table:    unix.RT_TABLE_MAIN,
	}, nil
}

// Tagged lists our routes in the namespace (main table, both families).
func (n *NS) Tagged() ([]plan.Route, error) {
	var out []plan.Route
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rs, err := n.h.RouteListFiltered(fam, &netlink.Route{Protocol: Protocol}, netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			return nil, fmt.Errorf("list routes in %s: %w", n.Path, err)
		}
		for _, r := range rs {
			if r.Dst == nil {
				continue
			}
			a, _ := netip.AddrFromSlice(r.Dst.IP)
			if fam == netlink.FAMILY_V4 {
				a = a.Unmap()
			}
			bits, _ := r.Dst.Mask.Size()
			typ := plan.Blackhole
			if r.Type == unix.RTN_PROHIBIT {
				typ = plan.Prohibit
			}
			out = append(out, plan.Route{Dst: netip.PrefixFrom(a, bits), Type: typ})
		}
	}
	plan.SortRoutes(out)
	return out, nil
}

// Sync makes our routes in the namespace exactly want (nil removes them
// all) and returns what it changed. Deletions go first so a route whose
// type changes can be re-added.
func (n *NS) Sync(want []plan.Route) (added, deleted []plan.Route, err error) {
	have, err := n.Tagged()
	if err != nil {
		return nil, nil, err
	}
	add, del := plan.Diff(want, have)
	var errs []error
	for _, r := range del {
		nr, _ := toNetlink(r)
		if e := n.h.RouteDel(nr); e != nil && !errors.Is(e, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("delete %s in %s: %w", r, n.Path, e))
			continue
		}
		deleted = append(deleted, r)
	}
	for _, r := range add {
		nr, e := toNetlink(r)
		if e == nil {
			e = n.h.RouteAdd(nr)
		}
		if e != nil {
			errs = append(errs, fmt.Errorf("add %s in %s: %w", r, n.Path, e))
			continue
		}
		added = append(added, r)
	}
	return added, deleted, errors.Join(errs...)
}

// List returns the namespace files in dir, sorted.
func List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list network namespaces: %w", err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// Found is one namespace holding our routes.
type Found struct {
	Path   string
	Routes []plan.Route
}

// FindByIP returns the namespace in dir that holds ip.
func FindByIP(dir string, ip netip.Addr) (string, error) {
	paths, err := List(dir)
	if err != nil {
		return "", err
	}
	var errs []error
	for _, p := range paths {
		n, err := Open(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ok, err := n.HasAddr(ip)
		n.Close()
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("no network namespace in %s holds %s (%d searched): %w", dir, ip, len(paths), errors.Join(errs...))
}

// TaggedEverywhere lists our routes in every namespace in dir. Namespaces
// that cannot be opened (a pod being torn down) are skipped and reported in
// the error.
func TaggedEverywhere(dir string) ([]Found, error) {
	paths, err := List(dir)
	if err != nil {
		return nil, err
	}
	var out []Found
	var errs []error
	for _, p := range paths {
		n, err := Open(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rs, err := n.Tagged()
		n.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(rs) > 0 {
			out = append(out, Found{Path: p, Routes: rs})
		}
	}
	return out, errors.Join(errs...)
}
