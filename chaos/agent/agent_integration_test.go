//go:build integration && linux

package agent

// The agent's whole node path on a real kernel: find the pod's network
// namespace by its IP among /var/run/netns, install the routes, heal at the
// deadline, and after a restart remove only its own leftovers. The
// apiserver is the fake dynamic client (the cluster tests use a real one).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/fencecheck/fencecheck/chaos/netrules"
	"github.com/fencecheck/fencecheck/chaos/plan"
)

func sh(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// podNetns makes a namespace holding ip on an interface, like a pod's, and
// returns its name and a private directory holding only it: the agent heals
// every tagged namespace in its directory, and must not touch the
// namespaces of tests running in parallel.
func podNetns(t *testing.T, ip string) (string, string) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (network namespaces): run scripts/test-integration-chaos.sh as root")
	}
	name := fmt.Sprintf("fcagent%d", time.Now().UnixNano()%1000000)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	sh(t, "ip", "netns", "add", name)
	sh(t, "ip", "-n", name, "link", "add", "eth0", "type", "veth", "peer", "name", "peer0") // no dummy driver on this kernel
	sh(t, "ip", "-n", name, "addr", "add", ip+"/24", "dev", "eth0")
	sh(t, "ip", "-n", name, "link", "set", "eth0", "up")
	sh(t, "ip", "-n", name, "link", "set", "peer0", "up")
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(netrules.DefaultDir, name), filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	return name, dir
}

func TestAgentOnRealNamespaces(t *testing.T) {
	name, dir := podNetns(t, "10.244.0.5") // pods()'s rec-0 on n1
	nc := leaderPartition("cut")
	f := newFixture(t, nc)
	f.a.NS = &LinuxNamespaces{Dir: dir}
	ctx := context.Background()
	if _, err := f.a.Reconcile(ctx, []*v1alpha1.NetworkChaos{f.current(t, "cut")}, pods()); err != nil {
		t.Fatal(err)
	}
	got := sh(t, "ip", "-n", name, "route", "show", "proto", "147")
	if !strings.Contains(got, "blackhole 10.96.0.1") || !strings.Contains(got, "blackhole 172.18.0.2") {
		t.Fatalf("routes in the pod namespace:\n%s", got)
	}
	if p := plan.Progress(&f.current(t, "cut").Status)["app/rec-0"]; p == nil || p.Injected.IsZero() {
		t.Fatalf("status %+v", p)
	}

	// A restarted agent (fresh cache) keeps an active partition...
	f.a.NS = &LinuxNamespaces{Dir: dir}
	sh(t, "ip", "-n", name, "route", "add", "blackhole", "10.99.0.1/32") // not ours: must survive
	sh(t, "ip", "-n", name, "route", "add", "prohibit", "1.2.3.4/32", "proto", "147")
	f.a.Reconcile(ctx, []*v1alpha1.NetworkChaos{f.current(t, "cut")}, pods())
	got = sh(t, "ip", "-n", name, "route", "show", "proto", "147")
	if strings.Contains(got, "1.2.3.4") || !strings.Contains(got, "10.96.0.1") {
		t.Fatalf("after restart:\n%s", got)
	}
	// ...and heals it at the deadline.
	f.clk.t = t0.Add(31 * time.Second)
	f.a.Reconcile(ctx, []*v1alpha1.NetworkChaos{f.current(t, "cut")}, pods())
	if got := sh(t, "ip", "-n", name, "route", "show", "proto", "147"); strings.TrimSpace(got) != "" {
		t.Fatalf("routes after the deadline:\n%s", got)
	}
	if got := sh(t, "ip", "-n", name, "route", "show", "type", "blackhole"); !strings.Contains(got, "10.99.0.1") {
		t.Fatalf("the agent removed a route it does not own:\n%s", got)
	}
	if p := plan.Progress(&f.current(t, "cut").Status)["app/rec-0"]; p.Recovered.IsZero() {
		t.Fatal("recovery not recorded")
	}
}
