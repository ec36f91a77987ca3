package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadSinkToken(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "writer")
	empty := filepath.Join(dir, "empty")
	os.WriteFile(good, []byte(" w-token\n"), 0o600)
	os.WriteFile(empty, []byte("\n"), 0o600)
	if tok, err := readSinkToken(good); err != nil || tok != "w-token" {
		t.Fatalf("good file: %q %v", tok, err)
	}
	if tok, err := readSinkToken(""); err != nil || tok != "" {
		t.Fatalf("no file: %q %v", tok, err)
	}
	for _, p := range []string{empty, filepath.Join(dir, "missing")} {
		if _, err := readSinkToken(p); err == nil {
			t.Fatalf("%s: no error", p)
		}
	}
}

// A named token file that cannot be read stops the reconciler at once
// (exit 2), from the flag and from the environment alike.
func TestTokenFileMissingIsAnError(t *testing.T) {
	t.Setenv("POD_NAME", "reconciler-0")
	t.Setenv("POD_NAMESPACE", "ns")
	if code := run([]string{"--sink-token-file", "/nonexistent/token"}); code != 2 {
		t.Fatalf("flag: exit %d, want 2", code)
	}
	t.Setenv(SinkTokenFileEnv, "/nonexistent/token")
	if code := run(nil); code != 2 {
		t.Fatalf("env: exit %d, want 2", code)
	}
}
