package main

import (
	"strings"
	"testing"
	"time"
)

func TestFromEnv(t *testing.T) {
	env := map[string]string{"FENCECHECK_NAMESPACE": "ns", "FENCECHECK_LEASE_NAME": "l", "FENCECHECK_SINK_URL": "http://witness:8080",
		"FENCECHECK_POD_NAME": "p", "FENCECHECK_LEASE_DURATION": "4s", "FENCECHECK_RENEW_DEADLINE": "3s", "FENCECHECK_RETRY_PERIOD": "1s"}
	c, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.LeaseDuration != 4*time.Second || c.DrainTimeout != 15*time.Second || c.WriteInterval != 200*time.Millisecond {
		t.Errorf("config %+v", c)
	}
	env["FENCECHECK_SINK_URL"], env["FENCECHECK_RENEW_DEADLINE"] = "witness", "5s"
	delete(env, "FENCECHECK_LEASE_NAME")
	_, err = FromEnv(func(k string) string { return env[k] })
	for _, want := range []string{"FENCECHECK_LEASE_NAME is not set", "not an absolute URL", "--renew-deadline"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}

func TestNewSinkToken(t *testing.T) {
	dir := t.TempDir()
	if s, err := NewSink("http://x", dir+"/absent"); err != nil || s.HasToken() {
		t.Errorf("an absent token file means no credential: %v %v", s, err)
	}
}
