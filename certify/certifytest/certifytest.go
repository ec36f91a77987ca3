// Package certifytest certifies a fencing sink from its vendor's own
// go test, the way testing/fstest.TestFS checks a file system: each
// profile is a subtest and each check a subtest of it, so
// `go test -run 'TestSink/core/'` runs one profile and a failure names its
// check with what was sent and what came back. `fencecheck certify` runs
// the same checks (package certify) from the command line.
package certifytest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/certify"
)

// Options says what to certify and how; zero values are certify's
// defaults (every profile the options allow, 6 writers x 40 operations, a
// random seed).
type Options struct {
	// Profiles to run; empty means every one the options allow (logged:
	// the others are NOT RUN, with the reason). The durability profile
	// needs Restart (graceful) and Kill (SIGKILL): each must return once
	// the old sink process is gone; a missing one leaves its checks
	// inconclusive.
	Profiles      []string
	Restart, Kill func(ctx context.Context) error
	// Disposable or Reset (which makes the sink fresh and returns once it
	// answers) let the domain profile run: it raises the sink's floor to
	// 2^64-1 for ever.
	Disposable bool
	Reset      func(ctx context.Context) error
	// RestartTimeout bounds a restart plus the wait for the sink to answer.
	RestartTimeout time.Duration
	// HTTP is the client (timeouts, TLS, auth headers); redirects are
	// never followed.
	HTTP *http.Client
	// Seed fixes all the traffic; 0 draws one, which is logged.
	Seed                  int64
	Writers, OpsPerWriter int
	// ReportDir, when set, receives certify.json, junit.xml,
	// certificate.md and porcupine's visualization of a failed history.
	ReportDir string
}

// Run certifies the sink at url. A failed check fails its subtest; an
// inconclusive one (no evidence either way, e.g. a restart that did not
// restart anything) fails it too, since it is not a pass. Run returns the
// report.
func Run(t *testing.T, url string, opts Options) certify.Report {
	t.Helper()
	ctx := t.Context()
	var progress strings.Builder
	r, err := certify.NewRunner(ctx, certify.Config{
		SinkURL: url, Profiles: opts.Profiles, Restart: opts.Restart, Kill: opts.Kill,
		RestartTimeout: opts.RestartTimeout, HTTP: opts.HTTP, Progress: &progress,
		Writers: opts.Writers, OpsPerWriter: opts.OpsPerWriter, Seed: opts.Seed, ReportDir: opts.ReportDir,
		Disposable: opts.Disposable, Reset: opts.Reset,
	})
	if err != nil {
		t.Fatalf("certify %s: %v", url, err)
	}
	t.Logf("certify %s with seed %d (Options.Seed reproduces the traffic against a fresh sink)", url, r.Seed())
	for p, why := range r.Report().NotRun {
		t.Logf("profile %s NOT RUN: %s", p, why)
	}
	byProfile := map[string][]certify.CheckInfo{}
	var order []string
	for _, c := range r.Checks() {
		if byProfile[c.Profile] == nil {
			order = append(order, c.Profile)
		}
		byProfile[c.Profile] = append(byProfile[c.Profile], c)
	}
	for _, p := range order {
		t.Run(p, func(t *testing.T) {
			for _, c := range byProfile[p] {
				t.Run(strings.TrimPrefix(c.Name, p+"/"), func(t *testing.T) {
					report(t, r.Run(ctx, c.Name))
				})
			}
		})
	}
	rep := r.Report()
	if opts.ReportDir != "" {
		if err := certify.WriteReports(opts.ReportDir, rep); err != nil {
			t.Errorf("writing the reports: %v", err)
		}
	}
	return rep
}

// report turns one result into the subtest's outcome.
func report(t *testing.T, res certify.Result) {
	t.Helper()
	if res.Passed() {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n%s", res.Name, res.Summary, res.Message)
	for _, e := range res.Exchanges {
		fmt.Fprintf(&b, "\n%s", e.String())
	}
	if res.Verdict == certify.Inconclusive {
		t.Errorf("INCONCLUSIVE, not a pass: %s", b.String())
		return
	}
	t.Error(b.String())
}
