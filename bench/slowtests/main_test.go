package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Only top-level tests and packages that ended count; subtests are inside
// their parent's time, and run/output events carry none.
func TestReadKeepsTopLevelTestsAndPackages(t *testing.T) {
	file := filepath.Join(t.TempDir(), "unit.json")
	lines := `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN TestA\n"}
{"Action":"pass","Package":"p","Test":"TestA/sub","Elapsed":1.5}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":2}
{"Action":"fail","Package":"p","Test":"TestB","Elapsed":7}
{"Action":"skip","Package":"p","Test":"TestC","Elapsed":0}
{"Action":"fail","Package":"p","Elapsed":9.5}
`
	if err := os.WriteFile(file, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	tests, pkgs, err := read(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) != 2 || tests[0].test != "TestA" || tests[0].seconds != 2 || tests[1].test != "TestB" || tests[1].area != "unit" {
		t.Errorf("tests %+v, want TestA 2s and TestB 7s of area unit", tests)
	}
	if len(pkgs) != 1 || pkgs[0].pkg != "p" || pkgs[0].seconds != 9.5 {
		t.Errorf("packages %+v, want p 9.5s", pkgs)
	}
	if err := os.WriteFile(file, []byte("not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := read(file); err == nil {
		t.Error("a line that is not an event gave no error")
	}
}
