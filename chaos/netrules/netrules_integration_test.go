//go:build integration && linux

package netrules

// Proof of the rule logic on real kernels: two network namespaces joined by
// a veth pair. "pod" (10.77.0.2) is the namespace we cut; "net" holds the
// "apiserver" 10.77.1.1 (on its loopback, reached through the veth) and an
// "other service" 10.77.0.1. Needs root and iproute2.

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/chaos/plan"
	"github.com/vishvananda/netns"
)

const (
	podIP     = "10.77.0.2"
	otherIP   = "10.77.0.1"
	apiIP     = "10.77.1.1"
	echoPort  = "7000"
	otherPort = "7001"
	probeWait = 2 * time.Second
)

type topo struct{ pod, net string }

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func setup(t *testing.T) topo {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root (network namespaces): run scripts/test-integration-chaos.sh as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("needs iproute2: apt-get install -y iproute2 (scripts/test-integration-chaos.sh does it)")
	}
	id := fmt.Sprintf("%d%d", os.Getpid()%10000, time.Now().UnixNano()%1000)
	tp := topo{pod: "fcpod" + id, net: "fcnet" + id}
	t.Cleanup(func() { // even on failure
		exec.Command("ip", "netns", "del", tp.pod).Run()
		exec.Command("ip", "netns", "del", tp.net).Run()
	})
	run(t, "ip", "netns", "add", tp.pod)
	run(t, "ip", "netns", "add", tp.net)
	run(t, "ip", "link", "add", "fcv"+id, "netns", tp.pod, "type", "veth", "peer", "name", "fcp"+id, "netns", tp.net)
	run(t, "ip", "-n", tp.pod, "link", "set", "lo", "up")
	run(t, "ip", "-n", tp.net, "link", "set", "lo", "up")
	run(t, "ip", "-n", tp.pod, "addr", "add", podIP+"/24", "dev", "fcv"+id)
	run(t, "ip", "-n", tp.net, "addr", "add", otherIP+"/24", "dev", "fcp"+id)
	run(t, "ip", "-n", tp.net, "addr", "add", apiIP+"/32", "dev", "lo")
	run(t, "ip", "-n", tp.pod, "link", "set", "fcv"+id, "up")
	run(t, "ip", "-n", tp.net, "link", "set", "fcp"+id, "up")
	run(t, "ip", "-n", tp.pod, "route", "add", "default", "via", otherIP)
	return tp
}

// in runs fn with the calling thread inside the named namespace; sockets
// created there stay in it.
func in(t *testing.T, name string, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if err := netns.Set(ns); err != nil {
		t.Fatal(err)
	}
	defer netns.Set(orig)
	fn()
}

// echo serves line echo on addr inside ns until the test ends.
func echo(t *testing.T, ns, addr string) {
	var l net.Listener
	in(t, ns, func() {
		var err error
		if l, err = net.Listen("tcp", addr); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
}

type conn struct {
	c net.Conn
	r *bufio.Reader
	n int
}

func dial(t *testing.T, ns, laddr, raddr string) (*conn, error) {
	var c net.Conn
	var err error
	in(t, ns, func() {
		d := net.Dialer{Timeout: probeWait}
		if laddr != "" {
			d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(laddr)}
		}
		c, err = d.Dial("tcp", raddr)
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return &conn{c: c, r: bufio.NewReader(c)}, nil
}

// roundTrip sends one numbered line and waits for its echo, skipping
// echoes of earlier lines that were stuck during the cut.
func (c *conn) roundTrip(wait time.Duration) error {
	c.n++
	want := fmt.Sprintf("req-%d\n", c.n)
	c.c.SetDeadline(time.Now().Add(wait))
	if _, err := c.c.Write([]byte(want)); err != nil {
		return err
	}
	for {
		got, err := c.r.ReadString('\n')
		if err != nil {
			return err
		}
		if got == want {
			return nil
		}
	}
}

func openNS(t *testing.T, name string) *NS {
	n, err := Open(filepath.Join(DefaultDir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

func TestPartitionCutsEstablishedAndNewConnections(t *testing.T) {
	cases := []struct {
		name string
		typ  plan.RouteType
		port uint16 // port-scoped: a policy rule for TCP to this port only
	}{
		{"route-blackhole", plan.Blackhole, 0},
		{"route-prohibit", plan.Prohibit, 0},
		{"rule-blackhole-port", plan.Blackhole, 7000},
		{"rule-prohibit-port", plan.Prohibit, 7000},
	}
	for _, tc := range cases {
		typ := tc.typ
		t.Run(tc.name, func(t *testing.T) {
			tp := setup(t)
			echo(t, tp.net, apiIP+":"+echoPort)
			echo(t, tp.net, otherIP+":"+echoPort)
			echo(t, tp.net, apiIP+":"+otherPort)
			echo(t, tp.pod, podIP+":"+echoPort)
			api, err := dial(t, tp.pod, "", apiIP+":"+echoPort)
			if err != nil {
				t.Fatalf("before the cut, dial apiserver: %v", err)
			}
			other, err := dial(t, tp.pod, "", otherIP+":"+echoPort)
			if err != nil {
				t.Fatalf("before the cut, dial other: %v", err)
			}
			for _, c := range []*conn{api, other} {
				if err := c.roundTrip(probeWait); err != nil {
					t.Fatalf("before the cut: %v", err)
				}
			}

			sameHostOtherPort, err := dial(t, tp.pod, "", apiIP+":"+otherPort)
			if err != nil {
				t.Fatal(err)
			}

			n := openNS(t, tp.pod)
			cut := []plan.Route{{Dst: netip.MustParsePrefix(apiIP + "/32"), Type: typ, Port: tc.port}}
			if added, _, err := n.Sync(cut); err != nil || len(added) != 1 {
				t.Fatalf("cut: added %v, %v", added, err)
			}
			if got, _ := n.Tagged(); len(got) != 1 || got[0] != cut[0] {
				t.Fatalf("tagged routes after the cut: %v", got)
			}
			if err := api.roundTrip(probeWait); err == nil {
				t.Fatal("established connection to the apiserver still gets through during the cut")
			} else {
				t.Logf("established connection during the cut: %v", err)
			}
			if _, err := dial(t, tp.pod, "", apiIP+":"+echoPort); err == nil {
				t.Fatal("new connection to the apiserver succeeded during the cut")
			} else {
				t.Logf("new connection during the cut: %v", err)
			}
			if err := other.roundTrip(probeWait); err != nil {
				t.Fatalf("established connection to another destination broke: %v", err)
			}
			if c, err := dial(t, tp.pod, "", otherIP+":"+echoPort); err != nil {
				t.Fatalf("new connection to another destination failed: %v", err)
			} else if err := c.roundTrip(probeWait); err != nil {
				t.Fatal(err)
			}
			if tc.port != 0 {
				// Port-scoped: the target's other ports and the target's own
				// connections to the pod (the apiserver's pod proxy) still work.
				if err := sameHostOtherPort.roundTrip(probeWait); err != nil {
					t.Fatalf("established connection to another port of the target broke: %v", err)
				}
				if c, err := dial(t, tp.pod, "", apiIP+":"+otherPort); err != nil {
					t.Fatalf("new connection to another port of the target failed: %v", err)
				} else if err := c.roundTrip(probeWait); err != nil {
					t.Fatal(err)
				}
				if c, err := dial(t, tp.net, apiIP, podIP+":"+echoPort); err != nil {
					t.Fatalf("the target could not open a connection to the pod: %v", err)
				} else if err := c.roundTrip(probeWait); err != nil {
					t.Fatalf("the pod's replies to the target were cut: %v", err)
				}
			}

			healed := time.Now()
			if _, deleted, err := n.Sync(nil); err != nil || len(deleted) != 1 {
				t.Fatalf("heal: deleted %v, %v", deleted, err)
			}
			if got, _ := n.Tagged(); len(got) != 0 {
				t.Fatalf("routes left after heal: %v", got)
			}
			if err := api.roundTrip(30 * time.Second); err != nil {
				t.Fatalf("established connection did not recover after heal: %v", err)
			}
			t.Logf("established connection recovered %s after heal", time.Since(healed).Round(time.Microsecond))
			c, err := dial(t, tp.pod, "", apiIP+":"+echoPort)
			if err != nil {
				t.Fatalf("new connection after heal: %v", err)
			}
			if err := c.roundTrip(probeWait); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// direction "both": connections the target opens to the pod fail too,
// because the pod's replies cannot be routed back.
func TestPartitionBlocksConnectionsFromTheTarget(t *testing.T) {
	tp := setup(t)
	echo(t, tp.pod, podIP+":"+echoPort)
	if _, err := dial(t, tp.net, apiIP, podIP+":"+echoPort); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	n := openNS(t, tp.pod)
	if _, _, err := n.Sync([]plan.Route{{Dst: netip.MustParsePrefix(apiIP + "/32"), Type: plan.Blackhole}}); err != nil {
		t.Fatal(err)
	}
	if _, err := dial(t, tp.net, apiIP, podIP+":"+echoPort); err == nil {
		t.Fatal("the apiserver address could still open a connection to the pod")
	}
	if c, err := dial(t, tp.net, otherIP, podIP+":"+echoPort); err != nil {
		t.Fatalf("another address could not reach the pod: %v", err)
	} else if err := c.roundTrip(probeWait); err != nil {
		t.Fatal(err)
	}
	n.Sync(nil)
	if _, err := dial(t, tp.net, apiIP, podIP+":"+echoPort); err != nil {
		t.Fatalf("after heal: %v", err)
	}
}

// After a crash the agent finds the pod's namespace by its IP and its own
// leftover routes by their protocol tag, and removes only those.
func TestFindNamespaceAndRemoveLeftovers(t *testing.T) {
	tp := setup(t)
	got, err := FindByIP(DefaultDir, netip.MustParseAddr(podIP))
	if err != nil || got != filepath.Join(DefaultDir, tp.pod) {
		t.Fatalf("FindByIP = %q, %v; want %s", got, err, tp.pod)
	}
	if _, err := FindByIP(DefaultDir, netip.MustParseAddr("10.77.9.9")); err == nil {
		t.Fatal("FindByIP found a namespace for an address nobody holds")
	}
	n := openNS(t, tp.pod)
	if _, _, err := n.Sync([]plan.Route{
		{Dst: netip.MustParsePrefix(apiIP + "/32"), Type: plan.Prohibit},
		{Dst: netip.MustParsePrefix("10.78.0.0/16"), Type: plan.Blackhole},
		{Dst: netip.MustParsePrefix(apiIP + "/32"), Type: plan.Prohibit, Port: 6443},
	}); err != nil {
		t.Fatal(err)
	}
	// a route someone else owns, same type, no tag: must survive cleanup
	run(t, "ip", "-n", tp.pod, "route", "add", "blackhole", "10.79.0.1/32")
	n.Close()

	found, err := TaggedEverywhere(DefaultDir)
	var ours *Found
	for i := range found {
		if found[i].Path == filepath.Join(DefaultDir, tp.pod) {
			ours = &found[i]
		}
	}
	if ours == nil || len(ours.Routes) != 3 {
		t.Fatalf("leftovers not found: %+v (%v)", found, err)
	}
	fresh := openNS(t, tp.pod) // a restarted agent
	if _, deleted, err := fresh.Sync(nil); err != nil || len(deleted) != 3 {
		t.Fatalf("cleanup deleted %v, %v", deleted, err)
	}
	out, _ := exec.Command("ip", "-n", tp.pod, "route", "show", "type", "blackhole").CombinedOutput()
	if !strings.Contains(string(out), "10.79.0.1") {
		t.Fatalf("cleanup removed a route it does not own:\n%s", out)
	}
	if strings.Contains(string(out), "10.78.0.0") {
		t.Fatalf("cleanup left our route:\n%s", out)
	}
	if rules, _ := exec.Command("ip", "-n", tp.pod, "rule", "show").CombinedOutput(); strings.Contains(string(rules), "6443") {
		t.Fatalf("cleanup left our rule:\n%s", rules)
	}
}
