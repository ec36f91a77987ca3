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
)

func init() {
	register("certify", "check a sink against the sink contract v1 (core, idempotency, durability, concurrency)", runCertify)
}

// runCertify exits 0 when every profile run passed, 1 when a check failed
// (or the sink redirected), 2 on bad usage, 3 when the sink cannot be
// reached and 4 when nothing failed but a check was inconclusive.
func runCertify(args []string) int {
	fs := flag.NewFlagSet("certify", flag.ContinueOnError)
	sinkURL := fs.String("sink-url", "", "base URL of the sink, e.g. http://localhost:8080 (required)")
	profiles := fs.String("profile", "", "comma-separated profiles to run (default: all; without --restart-cmd all but durability, which the certificate then shows as not run)")
	restartCmd := fs.String("restart-cmd", "", "shell command that restarts the sink gracefully and returns once the old process is gone (durability profile)")
	killCmd := fs.String("kill-cmd", "", "shell command that kills the sink with SIGKILL, starts it again and returns once the old process is gone (durability profile)")
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
HTTP and prints one line per check. Exit status: 0 every profile passed,
1 a check failed or the sink redirected, 2 bad usage, 3 the sink could not
be reached, 4 no failure but a check was inconclusive or did not run.

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
	if *profiles == "" && *restartCmd == "" && *killCmd == "" {
		profs = slices.DeleteFunc(profs, func(p string) bool { return p == certify.ProfileDurability })
		fmt.Println("certify: durability profile NOT RUN: it needs --restart-cmd and --kill-cmd")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg := certify.Config{
		SinkURL: *sinkURL, Profiles: profs, RestartTimeout: *restartTimeout,
		Progress: os.Stdout, Writers: *writers, OpsPerWriter: *ops, Seed: *seed, ReportDir: *reportDir,
	}
	hc, err := certify.NewHTTPClient(certify.ClientOptions{Timeout: *timeout, Headers: headers, TokenFile: *tokenFile, CAFile: *caFile})
	if err != nil {
		fmt.Fprintln(os.Stderr, "certify:", err)
		return 2
	}
	cfg.HTTP = hc
	cfg.Restart, cfg.Kill = shellCmd(*restartCmd), shellCmd(*killCmd)
	fmt.Printf("certify: %s, profiles %s\n", *sinkURL, strings.Join(profs, ","))
	rep, err := certify.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "certify:", err)
		switch {
		case errors.Is(err, certify.ErrUnreachable):
			return 3
		case errors.Is(err, certify.ErrRedirect):
			return 1
		}
		return 2
	}
	if *reportDir != "" {
		if err := certify.WriteReports(*reportDir, rep); err != nil {
			fmt.Fprintln(os.Stderr, "certify:", err)
			return 1
		}
		fmt.Printf("reports: %s/{%s,%s,%s}\n", *reportDir, certify.FileJSON, certify.FileJUnit, certify.FileCertificate)
	}
	return summarize(rep, profs)
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
	for _, p := range profs {
		v := rep.ProfileVerdict(p)
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
