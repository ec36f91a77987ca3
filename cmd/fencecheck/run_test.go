package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/scenario"
)

// Bad usage is exit 2 with a line that says what to do, before anything
// is built or started.
func TestRunUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--target is required"},
		{[]string{"--target", "kind"}, `unknown target "kind"`},
		{[]string{"--target", "local", "--scenarios", "("}, "--scenarios: error parsing regexp"},
		{[]string{"--target", "local", "--scenarios", "^no-such$"}, "no scenario matches"},
		{[]string{"--target", "local", "extra"}, "want 0 argument(s)"},
		{[]string{"--target", "local", "--no-such-flag"}, "flag provided but not defined"},
		{[]string{"--target", "local", "--parallel", "0"}, "--parallel 0: at least 1"},
	} {
		var out, errb bytes.Buffer
		if code := runRun(tc.args, &out, &errb); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", tc.args, code, exitUsage)
		}
		if !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: stderr %q, want it to say %q", tc.args, errb.String(), tc.want)
		}
	}
}

// --list names every selected scenario with whether the local target
// can run it, and starts nothing.
func TestRunListsScenarios(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runRun([]string{"--target", "local", "--list"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(scenario.All()) {
		t.Fatalf("%d lines for %d scenarios:\n%s", len(lines), len(scenario.All()), out.String())
	}
	for i, d := range scenario.All() {
		if f := strings.Fields(lines[i]); len(f) < 2 || f[0] != d.Name {
			t.Errorf("line %d %q, want scenario %s first", i, lines[i], d.Name)
		}
	}
	out.Reset()
	if code := runRun([]string{"--target", "local", "--list", "--scenarios", "^partition-heal$"}, &out, &errb); code != exitOK ||
		strings.TrimSpace(out.String()) != "partition-heal                               runnable" {
		t.Errorf("exit %d, output %q", code, out.String())
	}
}
