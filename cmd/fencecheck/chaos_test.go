package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParsePartition(t *testing.T) {
	o, _, err := parsePartition([]string{"--namespace", "app", "--selector", "app=rec,tier=x", "--duration", "45s", "--direction", "both", "--targets", "10.96.0.1,172.18.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	if o2, _, err := parsePartition([]string{"--namespace", "a", "--pod", "p", "--tcp-ports", "443,6443"}); err != nil || len(o2.spec.TCPPorts) != 2 {
		t.Fatalf("--tcp-ports: %v %v", o2, err)
	}
	if o.spec.PodLabels["tier"] != "x" || o.spec.Duration != 45*time.Second || o.spec.Direction != "both" || len(o.spec.Targets) != 2 {
		t.Fatalf("%+v", o.spec)
	}
	for _, bad := range [][]string{
		{"--pod", "p"},       // no namespace
		{"--namespace", "a"}, // no target
		{"--namespace", "a", "--pod", "p", "--lease", "l"}, // two targets
		{"--namespace", "a", "--pod", "p", "--direction", "from"},
		{"--namespace", "a", "--pod", "p", "--executor", "litmus"},
		{"--namespace", "a", "--selector", "novalue"},
		{"--namespace", "a", "--pod", "p", "--duration", "0s"},
		{"--namespace", "a", "--pod", "p", "--bogus"},
		{"--namespace", "a", "--pod", "p", "extra"},
		{"--namespace", "a", "--pod", "p", "--tcp-ports", "https"},
	} {
		if _, _, err := parsePartition(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// The dry run works offline when the targets are given, and prints YAML a
// Chaos Mesh user recognizes.
func TestPartitionDryRunBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fencecheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "partition", "--namespace", "app", "--pod", "rec-0", "--duration", "40s", "--targets", "10.96.0.1", "--dry-run", "-o", "yaml")
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"kind: NetworkChaos", "action: partition", "duration: 40s", "- 10.96.0.1"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, out)
		}
	}
	if err := exec.Command(bin, "partition", "--bogus").Run(); err == nil {
		t.Error("unknown flag accepted")
	}
	if out, err := exec.Command(bin, "partition", "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "--duration") {
		t.Errorf("--help: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "partition-schedule", "--seed", "7", "--ttl", "10s").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"seed": 7`) {
		t.Fatalf("schedule: %v\n%s", err, out)
	}
	f := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(f, out, 0o644)
	if out, err := exec.Command(bin, "partition-schedule", "--replay", f).CombinedOutput(); err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	os.WriteFile(f, []byte(strings.Replace(string(out), `"seed": 7`, `"seed": 8`, 1)), 0o644)
	if err := exec.Command(bin, "partition-schedule", "--replay", f).Run(); err == nil {
		t.Fatal("replay accepted a schedule whose seed was edited")
	}
}
