package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/fencecheck/fencecheck/internal/images"
)

func init() {
	register("push-images", "push image archives to a registry (--image-repo) and print their digest references", func(args []string) int {
		return runPushImages(args, os.Stdout, os.Stderr)
	})
}

// runPushImages is the suite's --image-repo push on its own: for a user
// who pushes once and deploys by hand, and for scripts/conformance.sh to
// check the flag and the registry before it builds anything (--check).
func runPushImages(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("push-images", flag.ContinueOnError)
	fs.SetOutput(stderr)
	repoFlag := fs.String("image-repo", "", "REGISTRY/PATH to push to (required), e.g. registry.example.com/team/fencecheck")
	check := fs.Bool("check", false, "only check --image-repo and that the registry answers and accepts pushes; push nothing")
	out := fs.String("out", "", "write the map (archive tag -> REGISTRY/PATH/NAME@sha256:...) to this file instead of stdout")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: fencecheck push-images --image-repo REGISTRY/PATH [--out FILE] ARCHIVE...
       fencecheck push-images --image-repo REGISTRY/PATH --check

Pushes each single-image archive (scripts/images.sh --no-load writes them to
$FENCECHECK_CACHE/images/NAME.tar, tagged fencecheck/NAME:dev) to
REGISTRY/PATH/NAME and prints, as JSON, the reference by digest each one
runs as. Credentials come from the Docker config (docker login). A
registry on a private address or localhost is spoken to over plain HTTP.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
	}
	if *repoFlag == "" {
		fmt.Fprintln(stderr, "push-images: --image-repo is required")
		return exitUsage
	}
	repo, err := images.ParseRepo(*repoFlag)
	if err != nil {
		fmt.Fprintln(stderr, "push-images:", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *check {
		if fs.NArg() > 0 {
			fmt.Fprintln(stderr, "push-images: --check takes no archives")
			return exitUsage
		}
		if err := images.Reachable(ctx, repo); err != nil {
			fmt.Fprintln(stderr, "push-images:", err)
			return exitFailed
		}
		fmt.Fprintf(stderr, "push-images: %s answers and accepts pushes\n", repo)
		return exitOK
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "push-images: no archives to push")
		return exitUsage
	}
	m, err := images.Push(ctx, repo, fs.Args(), func(f string, a ...any) { fmt.Fprintf(stderr, "push-images: "+f+"\n", a...) })
	if err != nil {
		fmt.Fprintln(stderr, "push-images:", err)
		return exitFailed
	}
	if *out != "" {
		if err := m.WriteFile(*out); err != nil {
			fmt.Fprintln(stderr, "push-images:", err)
			return exitFailed
		}
		return exitOK
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	fmt.Fprintln(stdout, string(b))
	return exitOK
}
