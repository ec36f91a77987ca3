package main

import (
	"reflect"
	"strings"
	"testing"
)

// The command lines chaos-daemon builds (pkg/bpm build_linux.go): flags in
// any order, then -- and the command.
func TestParseDaemonCommandLines(t *testing.T) {
	for _, c := range []struct {
		args  []string
		ns    map[string]string
		local bool
		argv  []string
	}{
		{[]string{"-n", "/proc/42/ns/net", "--", "iptables", "-w", "-N", "CHAOS-INPUT"},
			map[string]string{"-n": "/proc/42/ns/net"}, false, []string{"iptables", "-w", "-N", "CHAOS-INPUT"}},
		{[]string{"-l", "-p", "/proc/7/ns/pid", "-n", "/proc/7/ns/net", "--", "tproxy", "-v"},
			map[string]string{"-p": "/proc/7/ns/pid", "-n": "/proc/7/ns/net"}, true, []string{"tproxy", "-v"}},
		{[]string{"--", "ipset", "list"}, map[string]string{}, false, []string{"ipset", "list"}},
	} {
		inv, err := parse(c.args)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if !reflect.DeepEqual(inv.ns, c.ns) || inv.local != c.local || !reflect.DeepEqual(inv.argv, c.argv) {
			t.Errorf("%v: got %+v", c.args, inv)
		}
	}
}

func TestParseRefusesBadCommandLines(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "missing -- CMD"},
		{[]string{"-n", "/proc/1/ns/net"}, "missing -- CMD"},
		{[]string{"-n", "--", "ip"}, "needs a namespace file"},
		{[]string{"-n", "a", "-n", "b", "--", "ip"}, "given twice"},
		{[]string{"-x", "--", "ip"}, "unknown argument"},
		{[]string{"--"}, "no command after --"},
	} {
		_, err := parse(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error with %q", c.args, err, c.want)
		}
	}
}

func TestRunRefusesMountAndUserNamespaces(t *testing.T) {
	for _, f := range []string{"-m", "-U"} {
		if code := run(invocation{ns: map[string]string{f: "/proc/1/ns/x"}, argv: []string{"true"}}); code != 2 {
			t.Errorf("%s: exit %d, want 2", f, code)
		}
	}
}
