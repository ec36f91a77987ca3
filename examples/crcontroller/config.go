package main

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/fencecheck/fencecheck/leader"
)

// Config is what the suite hands a controller through the environment
// (docs/controller-contract.md, "What the suite gives you").
type Config struct {
	Namespace, LeaseName, SinkURL, Pod string
	TokenFile                          string // empty: the sink takes no credential
	LeaseDuration, RenewDeadline       time.Duration
	RetryPeriod, DrainTimeout          time.Duration
	WriteInterval                      time.Duration
	Rows, BridgeCapacity               int
}

// FromEnv reads the FENCECHECK_* variables; the durations have
// client-go's defaults when unset, the names are required.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{Namespace: getenv("FENCECHECK_NAMESPACE"), LeaseName: getenv("FENCECHECK_LEASE_NAME"),
		SinkURL: getenv("FENCECHECK_SINK_URL"), Pod: getenv("FENCECHECK_POD_NAME"), TokenFile: getenv("FENCECHECK_SINK_TOKEN_FILE")}
	var errs []error
	for _, r := range []struct{ name, v string }{{"FENCECHECK_NAMESPACE", c.Namespace}, {"FENCECHECK_LEASE_NAME", c.LeaseName},
		{"FENCECHECK_SINK_URL", c.SinkURL}, {"FENCECHECK_POD_NAME", c.Pod}} {
		if r.v == "" {
			errs = append(errs, fmt.Errorf("%s is not set (the conformance suite injects it; see docs/controller-contract.md)", r.name))
		}
	}
	if c.SinkURL != "" {
		if u, err := url.Parse(c.SinkURL); err != nil || u.Scheme == "" || u.Host == "" {
			errs = append(errs, fmt.Errorf("FENCECHECK_SINK_URL %q is not an absolute URL", c.SinkURL))
		}
	}
	for _, d := range []struct {
		name string
		to   *time.Duration
		def  time.Duration
	}{{"FENCECHECK_LEASE_DURATION", &c.LeaseDuration, 15 * time.Second}, {"FENCECHECK_RENEW_DEADLINE", &c.RenewDeadline, 10 * time.Second},
		{"FENCECHECK_RETRY_PERIOD", &c.RetryPeriod, 2 * time.Second}, {"FENCECHECK_DRAIN_TIMEOUT", &c.DrainTimeout, 15 * time.Second},
		{"FENCECHECK_WRITE_INTERVAL", &c.WriteInterval, 200 * time.Millisecond}} {
		*d.to = d.def
		if v := getenv(d.name); v != "" {
			p, err := time.ParseDuration(v)
			if err != nil || p <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q is not a positive duration", d.name, v))
				continue
			}
			*d.to = p
		}
	}
	if err := leader.ValidateTiming(c.LeaseDuration, c.RenewDeadline, c.RetryPeriod); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}
