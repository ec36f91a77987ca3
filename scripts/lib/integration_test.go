package lib_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// integration_run selects exactly the tests of integration-tagged files,
// not the untagged ones make unit already ran.
func TestIntegrationRunSelectsTaggedTestsOnly(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a_test.go":     "package p\n\nfunc TestUnit(t *testing.T) {}\n",
		"b_test.go":     "//go:build integration\n\npackage p\n\nfunc TestOne(t *testing.T) {}\nfunc helper(t *testing.T) {}\nfunc TestTwo(t *testing.T) {}\n",
		"sub/c_test.go": "//go:build integration && linux\n\npackage q\n\nfunc TestThree(t *testing.T) {}\n",
		"sub/d_test.go": "//go:build cluster\n\npackage q\n\nfunc TestCluster(t *testing.T) {}\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(t, "integration_run "+dir, 20*time.Second)
	if err != nil {
		t.Fatalf("integration_run: %v\n%s", err, out)
	}
	re, err := regexp.Compile(out)
	if err != nil || out != "^(TestOne|TestThree|TestTwo)$" {
		t.Fatalf("integration_run printed %q (%v), want ^(TestOne|TestThree|TestTwo)$", out, err)
	}
	for _, name := range []string{"TestUnit", "TestCluster", "TestOneMore"} {
		if re.MatchString(name) {
			t.Errorf("%q selects %s", out, name)
		}
	}
	if out, err := run(t, "integration_run "+filepath.Join(dir, "sub-none-here"), 20*time.Second); err == nil {
		t.Errorf("a directory without integration tests gave %q and no error", out)
	}
}
