package main

import (
	"encoding/json"
	"testing"
)

func TestParseInvocation(t *testing.T) {
	cases := []struct {
		args []string
		want invocation
	}{
		{[]string{"--root", "/r", "--log", "/l", "--log-format", "json", "create", "--bundle", "/b", "--pid-file", "p", "id"}, invocation{"create", "/b", ""}},
		{[]string{"--systemd-cgroup", "run", "--bundle=/x", "id"}, invocation{"run", "/x", ""}},
		{[]string{"--root", "/r", "exec", "--process", "/tmp/p.json", "--detach", "id"}, invocation{"exec", "", "/tmp/p.json"}},
		{[]string{"state", "id"}, invocation{"state", "", ""}},
	}
	for _, c := range cases {
		if got := parseInvocation(c.args); got != c.want {
			t.Errorf("parseInvocation(%q) = %+v, want %+v", c.args, got, c.want)
		}
	}
}

func TestFilterSpecDropsOnlyMissing(t *testing.T) {
	allowed := capsFromMask(0x000001fffeffffff) // this VM: no CAP_SYS_RESOURCE
	if allowed["CAP_SYS_RESOURCE"] || !allowed["CAP_SYS_ADMIN"] {
		t.Fatalf("mask decoding wrong: %v", allowed)
	}
	spec := `{"ociVersion":"1.0.2","process":{"args":["sh"],"capabilities":{"bounding":["CAP_SYS_ADMIN","CAP_SYS_RESOURCE","CAP_FUTURE_THING"],"effective":["CAP_SYS_RESOURCE"]}},"root":{"path":"rootfs"}}`
	out, changed, err := filterSpec([]byte(spec), false, allowed)
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	var doc struct {
		OCIVersion string `json:"ociVersion"`
		Process    struct {
			Args []string            `json:"args"`
			Caps map[string][]string `json:"capabilities"`
		} `json:"process"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Process.Caps["bounding"]; len(got) != 2 || got[0] != "CAP_SYS_ADMIN" || got[1] != "CAP_FUTURE_THING" {
		t.Errorf("bounding = %v", got)
	}
	if got := doc.Process.Caps["effective"]; len(got) != 0 {
		t.Errorf("effective = %v", got)
	}
	if doc.OCIVersion != "1.0.2" || len(doc.Process.Args) != 1 {
		t.Errorf("other fields lost: %s", out)
	}
}

func TestFilterSpecOrdinaryHostUnchanged(t *testing.T) {
	allowed := capsFromMask(0x000001ffffffffff)
	spec := `{"process":{"capabilities":{"bounding":["CAP_SYS_RESOURCE"]}}}`
	out, changed, err := filterSpec([]byte(spec), false, allowed)
	if err != nil || changed || string(out) != spec {
		t.Fatalf("ordinary host must be untouched: changed=%v err=%v out=%s", changed, err, out)
	}
}

func TestFilterProcessSpec(t *testing.T) {
	allowed := capsFromMask(0x000001fffeffffff)
	out, changed, err := filterSpec([]byte(`{"args":["ls"],"capabilities":{"permitted":["CAP_SYS_RESOURCE","CAP_KILL"]}}`), true, allowed)
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	if string(out) != `{"args":["ls"],"capabilities":{"permitted":["CAP_KILL"]}}` {
		t.Errorf("got %s", out)
	}
}

func TestFilterSpecBadInput(t *testing.T) {
	if _, _, err := filterSpec([]byte("{not json"), false, nil); err == nil {
		t.Fatal("want error on bad JSON")
	}
}
