package lib_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A script works on the tree it lives in: a FENCECHECK_ROOT exported by
// another checkout's script (a bench running a clone) does not send it there.
func TestRootIsTheTreeOfTheScriptNotTheInheritedOne(t *testing.T) {
	tree, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	cmd := exec.Command("bash", "-c", `source common.sh; echo "$FENCECHECK_ROOT"`)
	cmd.Env = append(os.Environ(), "FENCECHECK_ROOT="+other, "FENCECHECK_CACHE="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sourcing common.sh: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != tree {
		t.Fatalf("FENCECHECK_ROOT is %q with %q inherited, want this tree %q", got, other, tree)
	}
}
