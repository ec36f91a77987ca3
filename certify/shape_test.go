package certify_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/certify"
	"github.com/fencecheck/fencecheck/contract"
	sink "github.com/fencecheck/fencecheck/fixtures/sink"
	"github.com/fencecheck/fencecheck/fixtures/sink/fence"
	"github.com/fencecheck/fencecheck/fixtures/sink/sinktest"
	"github.com/fencecheck/fencecheck/fixtures/sink/store"
)

// Negative controls for the shape of certify's traffic and output:
// redirects, hostile text, a sink that only fences what looks like a test,
// and fencing kept apart from wire hygiene.

func wrapped(t *testing.T, mw func(http.Handler) http.Handler) *sinktest.Sink {
	return sinktest.StartWith(t, boltOpener(t.TempDir()), reference, mw)
}

func certifyProfiles(t *testing.T, url string, profiles ...string) certify.Report {
	t.Helper()
	rep, err := certify.Run(context.Background(), certify.Config{SinkURL: url, Profiles: profiles, Seed: 5})
	if err != nil {
		t.Fatalf("certify.Run: %v", err)
	}
	return rep
}

func wantFailed(t *testing.T, rep certify.Report, want ...string) {
	t.Helper()
	if got := rep.Failed(); !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("failed checks\n got  %v\n want %v", got, want)
	}
}

// A URL that answers 307 to a conformant sink elsewhere is not certified.
func TestRedirectIsNotFollowed(t *testing.T) {
	target := sinktest.Start(t, boltOpener(t.TempDir()), "")
	redirector := func(only string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if only == "" || r.Method == only {
				http.Redirect(w, r, target.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
				return
			}
			// everything else is proxied by hand to the real sink
			req, _ := http.NewRequestWithContext(r.Context(), r.Method, target.URL+r.URL.RequestURI(), r.Body)
			req.Header = r.Header.Clone()
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			w.WriteHeader(resp.StatusCode)
			io.Copy(w, resp.Body)
		}))
		t.Cleanup(srv.Close)
		return srv
	}

	t.Run("every request redirected", func(t *testing.T) {
		_, err := certify.Run(context.Background(), certify.Config{SinkURL: redirector("").URL, Profiles: []string{"core"}})
		if !errors.Is(err, certify.ErrRedirect) || !strings.Contains(err.Error(), "307") || !strings.Contains(err.Error(), target.URL) {
			t.Fatalf("want ErrRedirect naming 307 and the target, got %v", err)
		}
	})
	t.Run("only writes redirected", func(t *testing.T) {
		rep := certifyProfiles(t, redirector(http.MethodPut).URL, "core")
		if rep.ProfilePassed("core") {
			t.Fatal("core passed through a redirector")
		}
		for _, res := range rep.Results {
			if !res.Passed() && !strings.Contains(res.Message, "redirect") {
				t.Errorf("%s failed without saying it was a redirect: %s", res.Name, res.Message)
			}
		}
	})
}

// hostile answers every write with terminal escapes, a closing code fence,
// a bidi override and 10 kB of text.
const hostile = "\x1b[2J\x1b]0;owned\x07```\n# injected heading\n\u202e<script>alert(1)</script>\x00"

func TestSinkTextIsEscapedInEveryOutput(t *testing.T) {
	s := wrapped(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut {
				w.WriteHeader(http.StatusInternalServerError)
				io.WriteString(w, hostile+strings.Repeat("x", 10_000))
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	var term strings.Builder
	rep, err := certify.Run(context.Background(), certify.Config{SinkURL: s.URL, Profiles: []string{"core"}, Progress: &term, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failed()) == 0 {
		t.Fatal("the hostile sink passed core")
	}
	dir := t.TempDir()
	if err := certify.WriteReports(dir, rep); err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{"terminal": term.String()}
	for _, f := range []string{certify.FileJSON, certify.FileJUnit, certify.FileCertificate} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		outputs[f] = string(b)
	}
	for name, out := range outputs {
		for _, bad := range []string{"\x1b", "\x07", "\x00", "\u202e", "\n# injected"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s contains %q raw", name, bad)
			}
		}
		if strings.Contains(out, strings.Repeat("x", 1000)) {
			t.Errorf("%s carries the 10 kB body untruncated", name)
		}
	}
	// The certificate's code blocks are the ones it opened: an even number
	// of fences, each on a line of its own.
	md := outputs[certify.FileCertificate]
	fences := 0
	for _, line := range strings.Split(md, "\n") {
		if strings.Contains(line, "```") {
			if line != "```" {
				t.Errorf("certificate line with a code fence inside text: %q", line)
			}
			fences++
		}
	}
	if fences == 0 || fences%2 != 0 {
		t.Errorf("certificate has %d code fences", fences)
	}
	if !strings.Contains(md, `\x1b[2J`) {
		t.Errorf("the certificate does not show the sink's text escaped:\n%s", md)
	}
}

// A sink that fences only keys that look like certify's and accepts
// anything else: certify's keys carry no such mark, so it fails core.
func TestSinkFencingOnlyRecognisedKeysFails(t *testing.T) {
	s := sinktest.StartWith(t, boltOpener(t.TempDir()), func(st store.Store) (sink.Config, error) {
		return sink.Config{Store: st, Rule: func(state fence.State, r fence.Request) fence.Decision {
			if r.Op == contract.OpPut && !strings.HasPrefix(r.Key, "certify-") && r.EpochErr == nil {
				return store.Unfenced(state, r)
			}
			return fence.Decide(state, r)
		}}, nil
	})
	rep := certifyProfiles(t, s.URL, "core")
	// write-commits too: its unfenced writes do not raise the floor
	wantFailed(t, rep, "core/write-commits", "core/stale-write-rejected", "core/floor-is-global", "core/fence-raises-floor", "core/model-sequences")
}

func TestSeedFixesTheTraffic(t *testing.T) {
	keysOf := func(seed int64) []string {
		var keys []string
		s := wrapped(t, func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPut {
					k, _ := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), contract.PathRecords))
					keys = append(keys, k) // one check at a time: no concurrent writes here
				}
				h.ServeHTTP(w, r)
			})
		})
		rep, err := certify.Run(context.Background(), certify.Config{SinkURL: s.URL, Profiles: []string{"core"}, Seed: seed})
		if err != nil || len(rep.Failed()) > 0 {
			t.Fatalf("seed %d: %v %v", seed, err, rep.Failed())
		}
		return keys
	}
	a, b, c := keysOf(11), keysOf(11), keysOf(12)
	if !slices.Equal(a, b) {
		t.Error("the same seed sent different keys")
	}
	if slices.Equal(a, c) {
		t.Error("two seeds sent the same keys")
	}
	if len(a) < 20 {
		t.Fatalf("only %d writes", len(a))
	}
	// no shared prefix a sink could key on
	prefix := a[0]
	for _, k := range a[1:] {
		for !strings.HasPrefix(k, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	if prefix != "" {
		t.Errorf("every key starts with %q", prefix)
	}
}

// Fencing and wire hygiene are separate certificates: a sink that fences
// perfectly but answers 422 instead of 400 and takes values over 1 MiB
// passes core and fails only hygiene.
func TestHygieneIsNotCore(t *testing.T) {
	s := wrapped(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > contract.MaxValueBytes {
				// no size limit: keeps the first MiB and accepts
				r.Body = io.NopCloser(io.LimitReader(r.Body, contract.MaxValueBytes))
				r.ContentLength = contract.MaxValueBytes
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code == http.StatusBadRequest {
				rec.Code = http.StatusUnprocessableEntity
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
		})
	})
	rep := certifyProfiles(t, s.URL, "core", "idempotency", "hygiene")
	wantFailed(t, rep, "hygiene/epoch-format-is-400", "hygiene/value-size-limit", "hygiene/malformed-idempotency-key-rejected")
	if !rep.ProfilePassed("core") || !rep.ProfilePassed("idempotency") || rep.ProfileVerdict("hygiene") != certify.ProfileFail {
		t.Errorf("verdicts core %s idempotency %s hygiene %s", rep.ProfileVerdict("core"), rep.ProfileVerdict("idempotency"), rep.ProfileVerdict("hygiene"))
	}
}

// A profile asked for whose checks did not all run is never a pass.
func TestProfileVerdicts(t *testing.T) {
	all := certify.Checks([]string{"core"})
	var full certify.Report
	for _, c := range all {
		full.Results = append(full.Results, certify.Result{Profile: c.Profile, Name: c.Name, Verdict: certify.Pass})
	}
	partial := full
	partial.Results = full.Results[:len(full.Results)-1]
	undecided := full
	undecided.Results = slices.Clone(full.Results)
	undecided.Results[0].Verdict = certify.Inconclusive
	for _, c := range []struct {
		rep  certify.Report
		p    string
		want string
	}{
		{full, "core", certify.ProfilePass},
		{partial, "core", certify.ProfileIncomplete},
		{undecided, "core", certify.ProfileInconclusive},
		{full, "durability", certify.ProfileNotRun},
	} {
		if got := c.rep.ProfileVerdict(c.p); got != c.want {
			t.Errorf("%s: verdict %s, want %s", c.p, got, c.want)
		}
		if c.rep.ProfilePassed(c.p) != (c.want == certify.ProfilePass) {
			t.Errorf("%s: ProfilePassed disagrees with %s", c.p, c.want)
		}
	}
}

// Through the CLI a redirecting URL is a failure (exit 1) that says so.
func TestCLIRedirectIsAFailure(t *testing.T) {
	srv := httptest.NewServer(http.RedirectHandler("http://127.0.0.1:1/elsewhere", http.StatusTemporaryRedirect))
	t.Cleanup(srv.Close)
	code, out := runCLI(t, "certify", "--sink-url", srv.URL, "--profile", "core")
	if code != 1 || !strings.Contains(out, "redirect") || !strings.Contains(out, "307") || !strings.Contains(out, "127.0.0.1:1/elsewhere") {
		t.Fatalf("exit %d, want 1 naming the 307 and its target:\n%s", code, out)
	}
}
