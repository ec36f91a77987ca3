package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/conformance/undertest"
)

func init() {
	register("controller-check", "check a controller directory for CONTROLLER= before any cluster time", func(args []string) int {
		return runControllerCheck(args, os.Stdout, os.Stderr)
	})
}

// runControllerCheck is the doctor of docs/controller-contract.md: it
// reads DIR as make conformance CONTROLLER=DIR would and prints every
// problem with the MUST or SHOULD it breaks. Exit 0: no error (warnings
// are advice); 1: an error; 2: usage.
func runControllerCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("controller-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: fencecheck controller-check DIR

Checks a controller directory for make conformance CONTROLLER=DIR before any
cluster time (docs/controller-contract.md): its *.yaml as the suite reads
them, with the ${FENCECHECK_...} placeholders substituted. Errors, each
naming the MUST it breaks, the object and the field:
  - not exactly one Deployment; a cluster-scoped object (ClusterRole,
    ClusterRoleBinding, PersistentVolume, ...); an unknown ${FENCECHECK_...}
    placeholder or $(FENCECHECK_...) reference; a file that does not decode
    (MUST 10)
  - a pod template Pod Security "restricted" refuses, by its own checks
    (MUST 11: the scenario namespaces enforce it)
  - a ServiceAccount missing, not bound, or not allowed get, update and
    create on coordination.k8s.io leases (MUST 10); no ServiceAccount token
    in the pods (MUST 1); $(FENCECHECK_SINK_TOKEN_FILE) where it does not
    expand (MUST 8)
Warnings: no timing variable named (SHOULD 1), no readiness probe (SHOULD 3),
no list/watch on the Lease (SHOULD 6), an image pulled Always, a Namespace
dropped, a FENCECHECK_* env entry the suite replaces, a NetworkPolicy of
your own, a kind that is not built in.
Exit 0: no error; 1: an error; 2: usage.`)
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, 1); !ok {
		return code
	}
	dir := fs.Arg(0)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "controller-check: %s is not a directory\n", dir)
		return exitUsage
	}
	ps := undertest.Doctor(context.Background(), dir, scenario.DefaultTiming().Args())
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Severity == undertest.Error && ps[j].Severity != undertest.Error })
	errs := 0
	for _, p := range ps {
		fmt.Fprintln(stdout, p)
		if p.Severity == undertest.Error {
			errs++
		}
	}
	if errs > 0 {
		fmt.Fprintf(stdout, "controller-check %s: FAILED (errors: %d, warnings: %d; docs/controller-contract.md)\n", dir, errs, len(ps)-errs)
		return exitFailed
	}
	fmt.Fprintf(stdout, "controller-check %s: OK (warnings: %d)\n", dir, len(ps))
	return exitOK
}
