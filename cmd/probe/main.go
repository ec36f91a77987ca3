// Command probe is the network probe the cluster tests and the chaos
// engineer run inside pods (image fencecheck/probe:dev):
//
//	probe serve --addr :8080                       answer GET /ping with the pod name/IP
//	probe check [--apiserver] [--url URL]          one check each, exit non-zero on failure
//	probe poll --interval 200ms --url URL --addr :8081
//	                                               poll both forever, counters at GET /stats
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: probe <command> [flags]

commands:
  serve   HTTP server answering GET /ping with this pod's name and IP
  check   GET the apiserver's /version through the kubernetes Service and/or a URL; exit 1 on failure
  poll    every --interval, GET the apiserver (kept-open client) and --url (new connection each time);
          counters and last errors as JSON at GET /stats on --addr, a line per change of state

run 'probe <command> --help' for flags`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "check":
		return runCheck(args[1:], stdout, stderr)
	case "poll":
		return runPoll(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "probe: unknown command %q\n\n%s\n", args[0], usage)
		return 2
	}
}
