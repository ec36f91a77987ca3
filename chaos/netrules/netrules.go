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

// RulePriority is where port-scoped cuts sit among the policy rules: after
// the local table (0), before main (32766). They carry Protocol too. The
// netlink library does not read a rule's action back, so the priority also
// encodes it: RulePriority for blackhole, RulePriority+1 for prohibit.
const RulePriority = 1470

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

func toRule(r plan.Route) (*netlink.Rule, error) {
	typ, ok := typeOf[r.Type]
	if !ok {
		return nil, fmt.Errorf("route type %q unknown", r.Type)
	}
	nr := netlink.NewRule()
	nr.Priority = RulePriority
	if r.Type == plan.Prohibit {
		nr.Priority = RulePriority + 1
	}
	nr.Dst = &net.IPNet{IP: net.IP(r.Dst.Addr().AsSlice()), Mask: net.CIDRMask(r.Dst.Bits(), r.Dst.Addr().BitLen())}
	nr.IPProto = unix.IPPROTO_TCP
	nr.Dport = netlink.NewRulePortRange(r.Port, r.Port)
	nr.Type = uint8(typ)
	nr.Protocol = uint8(Protocol)
	nr.Table = unix.RT_TABLE_UNSPEC
	return nr, nil
}

func typeFrom(t int) plan.RouteType {
	if t == unix.RTN_PROHIBIT {
		return plan.Prohibit
	}
	return plan.Blackhole
}

func prefix(n *net.IPNet, v4 bool) netip.Prefix {
	a, _ := netip.AddrFromSlice(n.IP)
	if v4 {
		a = a.Unmap()
	}
	bits, _ := n.Mask.Size()
	return netip.PrefixFrom(a, bits)
}

// Tagged lists our cuts in the namespace: routes (main table) and
// port-scoped policy rules, both families.
func (n *NS) Tagged() ([]plan.Route, error) {
	var out []plan.Route
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rs, err := n.h.RouteListFiltered(fam, &netlink.Route{Protocol: Protocol}, netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			return nil, fmt.Errorf("list routes in %s: %w", n.Path, err)
		}
		for _, r := range rs {
			if r.Dst != nil {
				out = append(out, plan.Route{Dst: prefix(r.Dst, fam == netlink.FAMILY_V4), Type: typeFrom(r.Type)})
			}
		}
		rules, err := n.h.RuleList(fam)
		if err != nil {
			return nil, fmt.Errorf("list rules in %s: %w", n.Path, err)
		}
		for _, r := range rules {
			if r.Protocol != uint8(Protocol) || r.Dst == nil || r.Dport == nil {
				continue
			}
			typ := plan.Blackhole
			if r.Priority == RulePriority+1 {
				typ = plan.Prohibit
			}
			out = append(out, plan.Route{Dst: prefix(r.Dst, fam == netlink.FAMILY_V4), Type: typ, Port: r.Dport.Start})
		}
	}
	plan.SortRoutes(out)
	return out, nil
}

func (n *NS) add(r plan.Route) error {
	if r.Port != 0 {
		nr, err := toRule(r)
		if err != nil {
			return err
		}
		return n.h.RuleAdd(nr)
	}
	nr, err := toNetlink(r)
	if err != nil {
		return err
	}
	return n.h.RouteAdd(nr)
}

func (n *NS) del(r plan.Route) error {
	var err error
	if r.Port != 0 {
		var nr *netlink.Rule
		if nr, err = toRule(r); err == nil {
			err = n.h.RuleDel(nr)
		}
	} else {
		var nr *netlink.Route
		if nr, err = toNetlink(r); err == nil {
			err = n.h.RouteDel(nr)
		}
	}
	if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) {
		return nil // already gone
	}
	return err
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
		if e := n.del(r); e != nil {
			errs = append(errs, fmt.Errorf("delete %s in %s: %w", r, n.Path, e))
			continue
		}
		deleted = append(deleted, r)
	}
	for _, r := range add {
		if e := n.add(r); e != nil {
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
