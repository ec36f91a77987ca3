package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/certify"
	"github.com/fencecheck/fencecheck/certify/modelseq"
)

func init() {
	register("certify", "check a sink against the sink contract v1 (core, idempotency, durability, concurrency, hygiene, domain)", runCertify)
}

// runCertify exits 0 when every profile run passed, 1 when a check failed
// (or the sink redirected), 2 on bad usage, 3 when the sink cannot be
// reached and 4 when nothing failed but a check was inconclusive.
func runCertify(args []string) int {
	fs := flag.NewFlagSet("certify", flag.ContinueOnError)
	sinkURL := fs.String("sink-url", "", "base URL of the sink, e.g. http://localhost:8080 (required)")
	profiles := fs.String("profile", "", "comma-separated profiles to run: core, idempotency, durability, concurrency, hygiene, domain (default: every one the flags allow; durability needs --restart-cmd and --kill-cmd, domain --disposable or --reset-cmd; the certificate shows the others as NOT RUN with the reason)")
	restartCmd := fs.String("restart-cmd", "", "shell command that restarts the sink gracefully and returns once the old process is gone (durability profile)")
	killCmd := fs.String("kill-cmd", "", "shell command that kills the sink with SIGKILL, starts it again and returns once the old process is gone (durability profile)")
	disposable := fs.Bool("disposable", false, "the sink may be left unusable: run the domain profile, whose walk raises the floor to 2^64-1, after which the sink refuses every writer for ever")
	resetCmd := fs.String("reset-cmd", "", "shell command that makes the sink fresh (floor 0, no records) and returns once it answers; implies --disposable, resets before and after the domain profile and lets a failing walk be shrunk")
	steps := fs.String("steps", "", "replay steps of one model sequence instead of certifying: the `LIST` (e.g. 3,17-19) a failed check printed, with its --seed and --profile")
	restartTimeout := fs.Duration("restart-timeout", 2*time.Minute, "deadline for the restart command plus the sink answering again")
	reportDir := fs.String("report", "", "directory for certify.json, junit.xml and certificate.md")
	writers := fs.Int("writers", 6, "concurrency profile: parallel writers")
	ops := fs.Int("ops", 40, "concurrency profile: operations per writer")
	seed := fs.Int64("seed", 0, "seed of all the traffic: keys, values, filler writes, the concurrency workload (0 picks one and prints it)")
	timeout := fs.Duration("request-timeout", 15*time.Second, "timeout of one HTTP request")
	var headers headerList
	fs.Var(&headers, "header", "`Name: value` sent with every request (repeatable), e.g. for an API key")
	tokenFile := fs.String("token-file", "", "file with a bearer token, sent as \"Authorization: Bearer <token>\"")
	caFile := fs.String("ca-file", "", "PEM CA bundle to trust for an https:// sink (instead of the system roots)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: fencecheck certify --sink-url URL [flags]

Runs the sink contract v1 checks (docs/sink-contract.md) against a sink over
HTTP and prints one line per check. Exit status: 0 every profile run
passed, 1 a check failed or the sink redirected, 2 bad usage, 3 the sink
could not be reached, 4 no failure but a check was inconclusive or did not
run. A profile that did not run is NOT RUN, never PASS.

The model checks (core/model-sequences, idempotency/model-retries,
domain/whole-range-walk) send sequences drawn from --seed and compare every
field of every answer with the contract's model. A failure is shrunk to a
few steps and printed as a line that replays them:

  fencecheck certify --sink-url URL --profile core --seed S --steps 31,57

The domain profile walks the floor up to 2^64-1 and leaves the sink
refusing every writer: it runs only with --disposable or --reset-cmd.

flags:
`)
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, 0); !ok {
		return code
	}
	if *sinkURL == "" {
		fmt.Fprintln(os.Stderr, "certify: --sink-url is required")
		fs.Usage()
		return 2
	}
	if !strings.HasPrefix(*sinkURL, "http://") && !strings.HasPrefix(*sinkURL, "https://") {
		fmt.Fprintf(os.Stderr, "certify: --sink-url %q must start with http:// or https://\n", *sinkURL)
		return 2
	}
	profs, err := certify.ParseProfiles(*profiles)
	if err != nil {
		fmt.Fprintln(os.Stderr, "certify:", err)
		return 2
	}
	cfg := certify.Config{
		SinkURL: *sinkURL, Profiles: profs, RestartTimeout: *restartTimeout,
		Progress: os.Stdout, Writers: *writers, OpsPerWriter: *ops, Seed: *seed, ReportDir: *reportDir,
		Disposable: *disposable,
	}
	cfg.Restart, cfg.Kill, cfg.Reset = shellCmd(*restartCmd), shellCmd(*killCmd), shellCmd(*resetCmd)
	var replay []int
	if *steps != "" {
		if replay, err = modelseq.ParseSteps(*steps); err != nil {
			fmt.Fprintln(os.Stderr, "certify:", err)
			return 2
		}
	}
	run, notRun, err := certify.PlanProfiles(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "certify:", err)
		return 2
	}
	if replay == nil {
		for _, p := range certify.AllProfiles {
			if why, ok := notRun[p]; ok && len(profs) == 0 {
				fmt.Printf("certify: %s profile NOT RUN: %s\n", p, why)
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	hc, err := certify.NewHTTPClient(certify.ClientOptions{Timeout: *timeout, Headers: headers, TokenFile: *tokenFile, CAFile: *caFile})
	if err != nil {
		fmt.Fprintln(os.Stderr, "certify:", err)
		return 2
	}
	cfg.HTTP = hc
	if replay != nil {
		return runReplay(ctx, cfg, replay)
	}
	fmt.Printf("certify: %s, profiles %s\n", *sinkURL, strings.Join(run, ","))
	rep, err := certify.Run(ctx, cfg)
	if err != nil {
		return startError(err)
	}
	if *reportDir != "" {
		if err := certify.WriteReports(*reportDir, rep); err != nil {
			fmt.Fprintln(os.Stderr, "certify:", err)
			return 1
		}
		fmt.Printf("reports: %s/{%s,%s,%s}\n", *reportDir, certify.FileJSON, certify.FileJUnit, certify.FileCertificate)
	}
	return summarize(rep, run)
}

// startError reports why certify could not start and picks the exit status.
func startError(err error) int {
	fmt.Fprintln(os.Stderr, "certify:", err)
	switch {
	case errors.Is(err, certify.ErrUnreachable):
		return 3
	case errors.Is(err, certify.ErrRedirect):
		return 1
	}
	return 2
}

// runReplay replays steps of one model sequence and prints each with the
// sink's answer and the model's: exit 0 when every answer was the model's.
func runReplay(ctx context.Context, cfg certify.Config, steps []int) int {
	res, err := certify.Replay(ctx, cfg, steps)
	if err != nil {
		return startError(err)
	}
	fmt.Printf("certify: replaying %s against %s\n", res.Summary, cfg.SinkURL)
	for _, e := range res.Exchanges {
		fmt.Println(e.String())
	}
	fmt.Printf("%s %s\n", strings.ToUpper(string(res.Verdict)), res.Message)
	switch res.Verdict {
	case certify.Pass:
		return 0
	case certify.Fail:
		return 1
	}
	return 4
}

// headerList collects repeated --header flags.
type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

// shellCmd runs cmdline with sh -c; nil when there is none.
func shellCmd(cmdline string) func(context.Context) error {
	if cmdline == "" {
		return nil
	}
	return func(ctx context.Context) error {
		c := exec.CommandContext(ctx, "sh", "-c", cmdline)
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		return c.Run()
	}
}

// summarize prints a verdict per profile and picks the exit status: 0 only
// when every profile asked for ran in full and passed.
func summarize(rep certify.Report, profs []string) int {
	failed, undecided := rep.Failed(), rep.InconclusiveChecks()
	allPassed := true
	for _, p := range certify.AllProfiles {
		v := rep.ProfileVerdict(p)
		if !slices.Contains(profs, p) {
			fmt.Printf("profile %-12s %s: %s\n", p, v, rep.NotRun[p])
			continue
		}
		allPassed = allPassed && v == certify.ProfilePass
		fmt.Printf("profile %-12s %s\n", p, v)
	}
	fmt.Printf("%d checks, %d failed, %d inconclusive (seed %d)\n", len(rep.Results), len(failed), len(undecided), rep.Seed)
	switch {
	case len(failed) > 0:
		return 1
	case !allPassed:
		return 4
	}
	return 0
}
