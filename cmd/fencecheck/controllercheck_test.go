package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestControllerCheck(t *testing.T) {
	for _, c := range []struct {
		dir  string
		code int
		says string
	}{
		{"../../examples/crcontroller/deploy/fenced", exitOK, "OK (warnings: 1)"},
		{"../../examples/fixture", exitOK, "OK (warnings: 0)"},
		{"../../examples/nodecontroller/deploy/fenced", exitOK, "OK (warnings: 0)"},
		{"../../examples/nodecontroller/deploy/no-fence", exitOK, "OK (warnings: 0)"},
		{"../../examples/nodecontroller/deploy/renew-bumps-term", exitOK, "OK (warnings: 0)"},
		{"../../conformance/undertest/testdata/bad-privileged", exitFailed, "error: MUST 11 (Pod Security restricted): Deployment ctl (deployment.yaml): spec.template.spec: runAsNonRoot"},
		{"../../conformance/undertest/testdata/bad-clusterrole", exitFailed, "FAILED (errors: 1, warnings: 0"},
		{"no-such-dir", exitUsage, ""},
	} {
		var out, errb bytes.Buffer
		code := runControllerCheck([]string{c.dir}, &out, &errb)
		if code != c.code || !strings.Contains(out.String(), c.says) {
			t.Errorf("%s: exit %d, want %d; output should say %q:\n%s%s", c.dir, code, c.code, c.says, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := runControllerCheck([]string{"--help"}, &out, &errb); code != exitOK || !strings.Contains(errb.String(), "MUST 11") {
		t.Errorf("--help: exit %d\n%s", code, errb.String())
	}
	if code := runControllerCheck(nil, &out, &errb); code != exitUsage {
		t.Errorf("no argument: exit %d, want %d", code, exitUsage)
	}
}
