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

// Profiles, in the order they run. core is fencing only; hygiene is wire
// format (exact status codes, size limits, malformed keys), kept apart so a
// certificate about fencing is not failed by hygiene, nor the other way.
// domain walks the floor up to 2^64-1, which leaves the sink refusing
// every writer for ever: it runs last, and only on a sink declared
// disposable.
const (
	ProfileCore        = "core"
	ProfileIdempotency = "idempotency"
	ProfileDurability  = "durability"
	ProfileConcurrency = "concurrency"
	ProfileHygiene     = "hygiene"
	ProfileDomain      = "domain"
)

// AllProfiles lists every profile.
var AllProfiles = []string{ProfileCore, ProfileIdempotency, ProfileDurability, ProfileConcurrency, ProfileHygiene, ProfileDomain}

// Config says what to certify and how.
type Config struct {
	SinkURL  string
	Profiles []string // default: all
	// Restart restarts the sink gracefully, Kill kills it hard (SIGKILL)
	// and starts it again; both must return once the old process is gone.
	// The durability profile needs both: a mode without its command is
	// INCONCLUSIVE.
	Restart, Kill func(ctx context.Context) error
	// RestartTimeout bounds the restart plus the wait for the sink to answer.
	RestartTimeout time.Duration
	// HTTP is the client (timeouts, TLS, auth). certify never follows a
	// redirect whatever its CheckRedirect says.
	HTTP     *http.Client
	Progress io.Writer // one line per check; nil for none
	// Writers and OpsPerWriter size the concurrency profile.
	Writers, OpsPerWriter int
	// Seed draws every key, idempotency key, value and filler write of the
	// run, and the concurrency workload; 0 picks one. The same seed against
	// a fresh sink sends the same traffic.
	Seed  int64
	RunID string
	// ReportDir, when set, receives porcupine's visualization of a history
	// that is not linearizable (the CLI passes --report).
	ReportDir string
	// Disposable declares that the sink may be left unusable: the domain
	// profile raises its floor to 2^64-1, after which it refuses every
	// writer for ever. Reset, when set, makes the sink fresh (floor 0, no
	// records) and returns once it is; it also declares the sink
	// disposable, and lets a failing walk be replayed and shrunk. Without
	// either the domain profile does not run.
	Disposable bool
	Reset      func(ctx context.Context) error
}

// notRunReason says why profile p cannot run with cfg ("" when it can).
func (cfg Config) notRunReason(p string) string {
	switch {
	case p == ProfileDurability && cfg.Restart == nil && cfg.Kill == nil:
		return "it restarts the sink: it needs --restart-cmd and --kill-cmd"
	case p == ProfileDomain && !cfg.Disposable && cfg.Reset == nil:
		return "it raises the sink's floor to 2^64-1 for ever: it runs only on a sink declared disposable (--disposable, or a --reset-cmd that gives a fresh sink)"
	}
	return ""
}

// PlanProfiles is the profiles a run of cfg runs and why each other one
// does not. Without cfg.Profiles it runs every profile cfg allows; asked
// for by name, a profile that cannot run is an error.
func PlanProfiles(cfg Config) (run []string, notRun map[string]string, err error) {
	notRun = map[string]string{}
	for _, p := range cfg.Profiles {
		if !slices.Contains(AllProfiles, p) {
			return nil, nil, fmt.Errorf("unknown profile %q (known: %s)", p, strings.Join(AllProfiles, ","))
		}
		if why := cfg.notRunReason(p); why != "" {
			return nil, nil, fmt.Errorf("the %s profile cannot run: %s", p, why)
		}
	}
	for _, p := range AllProfiles {
		switch {
		case len(cfg.Profiles) > 0 && !slices.Contains(cfg.Profiles, p):
			notRun[p] = "not asked for (--profile)"
		case len(cfg.Profiles) == 0 && cfg.notRunReason(p) != "":
			notRun[p] = cfg.notRunReason(p)
		default:
			run = append(run, p)
		}
	}
	return run, notRun, nil
}

// Exchange is one request and what came back, for failure reports. Text
// from the sink is quoted and escaped. A step of a model-based check also
// has the model's answer (Want), and Error says why the sink's is not it.
type Exchange struct {
	Request  string `json:"request"`
	Status   int    `json:"status,omitempty"`
	Response string `json:"response,omitempty"`
	Error    string `json:"error,omitempty"`
	Want     string `json:"want,omitempty"`
}

func (e Exchange) String() string {
	if e.Want != "" {
		s := fmt.Sprintf("> %s\n< %s", e.Request, e.Response)
		if e.Error != "" {
			s += "   <- " + e.Error
		}
		return s + "\n= the model: " + e.Want
	}
	if e.Status == 0 && e.Error == "" && e.Response == "" {
		return "- " + e.Request // a note, not a request
	}
	if e.Error != "" {
		return fmt.Sprintf("> %s\n< error: %s", e.Request, e.Error)
	}
	return fmt.Sprintf("> %s\n< %d %s", e.Request, e.Status, e.Response)
}

// Verdict of one check. A check without evidence either way is
// inconclusive, which is never a pass.
type Verdict string

const (
	Pass         Verdict = "pass"
	Fail         Verdict = "fail"
	Inconclusive Verdict = "inconclusive"
)

// Result is the verdict of one check.
type Result struct {
	Profile   string        `json:"profile"`
	Name      string        `json:"name"` // profile/check
	Summary   string        `json:"summary"`
	Verdict   Verdict       `json:"verdict"`
	Message   string        `json:"message,omitempty"`
	Exchanges []Exchange    `json:"exchanges,omitempty"` // kept unless passed
	Duration  time.Duration `json:"duration_ns"`
}

// Passed reports whether the check passed.
func (r Result) Passed() bool { return r.Verdict == Pass }

// Report is the outcome of a certify run.
type Report struct {
	SinkURL  string    `json:"sink_url"`
	RunID    string    `json:"run_id"`
	Profiles []string  `json:"profiles"`
	Seed     int64     `json:"seed"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Results  []Result  `json:"results"`
	// NotRun says why each profile that did not run did not.
	NotRun map[string]string `json:"not_run,omitempty"`
}

// Failed lists the names of failed checks.
func (r Report) Failed() []string { return r.named(Fail) }

// InconclusiveChecks lists the names of inconclusive checks.
func (r Report) InconclusiveChecks() []string { return r.named(Inconclusive) }

func (r Report) named(v Verdict) []string {
	var out []string
	for _, res := range r.Results {
		if res.Verdict == v {
			out = append(out, res.Name)
		}
	}
	return out
}

// Profile verdicts.
const (
	ProfilePass         = "PASS"
	ProfileFail         = "FAIL"
	ProfileInconclusive = "INCONCLUSIVE" // no failure, but a check without evidence
	ProfileIncomplete   = "INCOMPLETE"   // some of its checks did not run
	ProfileNotRun       = "NOT RUN"
)

// ProfileVerdict is PASS only when every check of the profile ran and
// passed.
func (r Report) ProfileVerdict(p string) string {
	ran, failed, undecided := 0, false, false
	for _, res := range r.Results {
		if res.Profile != p {
			continue
		}
		ran++
		failed = failed || res.Verdict == Fail
		undecided = undecided || res.Verdict == Inconclusive
	}
	switch {
	case ran == 0:
		return ProfileNotRun
	case failed:
		return ProfileFail
	case ran < len(checksOf(p)):
		return ProfileIncomplete
	case undecided:
		return ProfileInconclusive
	}
	return ProfilePass
}

// ProfilePassed reports whether the profile's verdict is PASS.
func (r Report) ProfilePassed(p string) bool { return r.ProfileVerdict(p) == ProfilePass }

// ErrUnreachable wraps failures to talk to the sink at all before any check.
var ErrUnreachable = errors.New("sink unreachable")

// ErrRedirect is a sink answering with a redirect: certify never follows
// one, so a URL that points elsewhere is not certified.
var ErrRedirect = errors.New("the sink answered with a redirect; certify never follows a sink to another address")

// ParseProfiles turns "core,idempotency" into a validated list; "" is
// nil: every profile the run's flags allow (PlanProfiles).
func ParseProfiles(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
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

// refuseRedirect stops the client at the first 3xx: the redirect becomes
// the request's error, which names the status and the target.
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	return fmt.Errorf("%w (%d to %s)", ErrRedirect, status, quote(req.URL.String(), 200))
}

// CheckInfo names one check of the catalog.
type CheckInfo struct{ Profile, Name, Summary string }

// Checks lists the checks of the given profiles (all when empty) in run
// order.
func Checks(profiles []string) []CheckInfo {
	var out []CheckInfo
	for _, c := range catalog() {
		if len(profiles) == 0 || slices.Contains(profiles, c.profile) {
			out = append(out, CheckInfo{c.profile, c.profile + "/" + c.name, c.summary})
		}
	}
	return out
}

func checksOf(profile string) []CheckInfo { return Checks([]string{profile}) }

// Runner runs the checks of one certify run one at a time, in catalog
// order: Run runs them all, certifytest runs each as a subtest.
type Runner struct {
	cfg Config
	cl  *client.Client
	sh  *sharedState
	rep Report
}

// NewRunner validates cfg and probes the sink. The error is non-nil only
// when certify cannot start (bad config, sink unreachable, a redirect).
func NewRunner(ctx context.Context, cfg Config) (*Runner, error) {
	if cfg.SinkURL == "" {
		return nil, errors.New("no sink URL")
	}
	profiles, notRun, err := PlanProfiles(cfg)
	if err != nil {
		return nil, err
	}
	cfg.Profiles = profiles
	hc := &http.Client{Timeout: 15 * time.Second}
	if cfg.HTTP != nil {
		c := *cfg.HTTP
		hc = &c
	}
	hc.CheckRedirect = refuseRedirect
	cfg.HTTP = hc
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
		switch {
		case errors.Is(err, ErrRedirect):
			return nil, err // names the status and the target
		case rep.Status == http.StatusUnauthorized || rep.Status == http.StatusForbidden:
			return nil, fmt.Errorf("%w: GET %s%s answered %d %s: the sink wants credentials (--token-file or --header)", ErrUnreachable, cfg.SinkURL, contract.PathFence, rep.Status, body(rep.Body))
		case rep.Status != 0:
			return nil, fmt.Errorf("%w: GET %s%s answered %d %s: not a sink contract v1 endpoint?", ErrUnreachable, cfg.SinkURL, contract.PathFence, rep.Status, body(rep.Body))
		}
		return nil, fmt.Errorf("%w: %s", ErrUnreachable, scrub(err.Error()))
	}
	r := &Runner{cfg: cfg, cl: cl, sh: &sharedState{}}
	r.rep = Report{SinkURL: cfg.SinkURL, RunID: cfg.RunID, Profiles: cfg.Profiles, Seed: cfg.Seed, Started: time.Now().UTC(), NotRun: notRun}
	return r, nil
}

// Checks lists the checks this runner will run, in order.
func (r *Runner) Checks() []CheckInfo { return Checks(r.cfg.Profiles) }

// Seed is the run's seed (drawn when the config left it 0).
func (r *Runner) Seed() int64 { return r.cfg.Seed }

// Run runs one check by name (profile/check) and adds it to the report.
// Checks must run in the order Checks lists them (durability and
// concurrency share state between their checks).
func (r *Runner) Run(ctx context.Context, name string) Result {
	for _, chk := range catalog() {
		if chk.profile+"/"+chk.name == name && slices.Contains(r.cfg.Profiles, chk.profile) {
			res := scrubResult(runCheck(ctx, r.cfg, r.cl, r.sh, chk))
			r.rep.Results = append(r.rep.Results, res)
			printResult(r.cfg.Progress, res)
			return res
		}
	}
	return Result{Name: name, Verdict: Fail, Message: "no such check in the requested profiles"}
}

// Report is the report so far.
func (r *Runner) Report() Report {
	rep := r.rep
	rep.Results = slices.Clone(r.rep.Results)
	rep.Finished = time.Now().UTC()
	return rep
}

// Run certifies the sink. The error is non-nil only when certify could not
// start (bad config, sink unreachable, a redirect); check failures are in
// the report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	r, err := NewRunner(ctx, cfg)
	if err != nil {
		return Report{}, err
	}
	fmt.Fprintf(r.cfg.Progress, "...  seed %d (--seed %d sends the same traffic to a fresh sink)\n", r.cfg.Seed, r.cfg.Seed)
	for _, c := range r.Checks() {
		r.Run(ctx, c.Name)
	}
	return r.Report(), nil
}

func printResult(w io.Writer, r Result) {
	if r.Passed() {
		fmt.Fprintf(w, "PASS %-45s %s\n", r.Name, r.Duration.Round(time.Millisecond))
		return
	}
	tag := "FAIL"
	if r.Verdict == Inconclusive {
		tag = "INCONCLUSIVE"
	}
	fmt.Fprintf(w, "%s %-45s %s\n     %s\n", tag, r.Name, r.Duration.Round(time.Millisecond), strings.ReplaceAll(r.Message, "\n", "\n     "))
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
