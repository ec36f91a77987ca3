// Package certify checks a sink against sink contract v1 using only its
// HTTP binding (PUT/GET /v1/records, POST/GET /v1/fence). Each check uses
// fresh keys and epochs above the sink's current floor, so a sink that
// already holds data can be certified, and each failure says exactly what
// was sent and what came back.
package certify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/contract/client"
)

// Profiles, in the order they run.
const (
	ProfileCore        = "core"
	ProfileIdempotency = "idempotency"
	ProfileDurability  = "durability"
	ProfileConcurrency = "concurrency"
)

// AllProfiles lists every profile.
var AllProfiles = []string{ProfileCore, ProfileIdempotency, ProfileDurability, ProfileConcurrency}

// Config says what to certify and how.
type Config struct {
	SinkURL  string
	Profiles []string // default: all
	// Restart restarts the sink (durability profile). Required for it.
	Restart func(ctx context.Context) error
	// RestartTimeout bounds the restart plus the wait for the sink to answer.
	RestartTimeout time.Duration
	HTTP           *http.Client
	Progress       io.Writer // one line per check; nil for none
	// Writers and OpsPerWriter size the concurrency profile.
	Writers, OpsPerWriter int
	Seed                  int64 // concurrency workload seed; 0 picks one
	RunID                 string
}

// Exchange is one request and what came back, for failure reports.
type Exchange struct {
	Request  string `json:"request"`
	Status   int    `json:"status,omitempty"`
	Response string `json:"response,omitempty"`
	Error    string `json:"error,omitempty"`
}

func (e Exchange) String() string {
	if e.Status == 0 && e.Error == "" && e.Response == "" {
		return "- " + e.Request // a note, not a request
	}
	if e.Error != "" {
		return fmt.Sprintf("> %s\n< error: %s", e.Request, e.Error)
	}
	return fmt.Sprintf("> %s\n< %d %s", e.Request, e.Status, e.Response)
}

// Result is the verdict of one check.
type Result struct {
	Profile   string        `json:"profile"`
	Name      string        `json:"name"` // profile/check
	Summary   string        `json:"summary"`
	Passed    bool          `json:"passed"`
	Message   string        `json:"message,omitempty"`
	Exchanges []Exchange    `json:"exchanges,omitempty"` // kept on failure only
	Duration  time.Duration `json:"duration_ns"`
}

// Report is the outcome of a certify run.
type Report struct {
	SinkURL  string    `json:"sink_url"`
	RunID    string    `json:"run_id"`
	Profiles []string  `json:"profiles"`
	Seed     int64     `json:"seed"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Results  []Result  `json:"results"`
}

// Failed lists the names of failed checks.
func (r Report) Failed() []string {
	var out []string
	for _, res := range r.Results {
		if !res.Passed {
			out = append(out, res.Name)
		}
	}
	return out
}

// ProfilePassed reports whether every check of a profile passed (false if
// the profile did not run).
func (r Report) ProfilePassed(p string) bool {
	ran := false
	for _, res := range r.Results {
		if res.Profile == p {
			ran = true
			if !res.Passed {
				return false
			}
		}
	}
	return ran
}

// ErrUnreachable wraps failures to talk to the sink at all before any check.
var ErrUnreachable = errors.New("sink unreachable")

// ParseProfiles turns "core,idempotency" into a validated list.
func ParseProfiles(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return slices.Clone(AllProfiles), nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(AllProfiles, p) {
			return nil, fmt.Errorf("unknown profile %q (known: %s)", p, strings.Join(AllProfiles, ","))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

func newRunID() string {
	b := make([]byte, 3)
	rand.Read(b)
	return time.Now().UTC().Format("20060102t150405") + "-" + hex.EncodeToString(b)
}

// Run certifies the sink. The error is non-nil only when certify could not
// start (bad config, sink unreachable); check failures are in the report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.SinkURL == "" {
		return Report{}, errors.New("no sink URL")
	}
	if len(cfg.Profiles) == 0 {
		cfg.Profiles = slices.Clone(AllProfiles)
	}
	if slices.Contains(cfg.Profiles, ProfileDurability) && cfg.Restart == nil {
		return Report{}, errors.New("the durability profile needs a way to restart the sink (--restart-cmd)")
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 15 * time.Second}
	}
	if cfg.RestartTimeout <= 0 {
		cfg.RestartTimeout = 2 * time.Minute
	}
	if cfg.Writers <= 0 {
		cfg.Writers = 6
	}
	if cfg.OpsPerWriter <= 0 {
		cfg.OpsPerWriter = 40
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	if cfg.RunID == "" {
		cfg.RunID = newRunID()
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	cl := &client.Client{BaseURL: cfg.SinkURL, HTTP: cfg.HTTP}
	if _, rep, err := cl.Floor(ctx); err != nil {
		if rep.Status != 0 {
			return Report{}, fmt.Errorf("%w: GET %s%s answered %d %q: not a sink contract v1 endpoint?", ErrUnreachable, cfg.SinkURL, contract.PathFence, rep.Status, truncate(string(rep.Body), 200))
		}
		return Report{}, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	rep := Report{SinkURL: cfg.SinkURL, RunID: cfg.RunID, Profiles: cfg.Profiles, Seed: cfg.Seed, Started: time.Now().UTC()}
	sh := &sharedState{}
	for _, chk := range catalog() {
		if !slices.Contains(cfg.Profiles, chk.profile) {
			continue
		}
		res := runCheck(ctx, cfg, cl, sh, chk)
		rep.Results = append(rep.Results, res)
		printResult(cfg.Progress, res)
	}
	rep.Finished = time.Now().UTC()
	return rep, nil
}

func printResult(w io.Writer, r Result) {
	if r.Passed {
		fmt.Fprintf(w, "PASS %-45s %s\n", r.Name, r.Duration.Round(time.Millisecond))
		return
	}
	fmt.Fprintf(w, "FAIL %-45s %s\n     %s\n", r.Name, r.Duration.Round(time.Millisecond), strings.ReplaceAll(r.Message, "\n", "\n     "))
	for _, e := range r.Exchanges {
		fmt.Fprintf(w, "     %s\n", strings.ReplaceAll(e.String(), "\n", "\n     "))
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}
