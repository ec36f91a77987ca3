package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// retryEvery is how often a check under --wait is tried again.
var retryEvery = 500 * time.Millisecond

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apiserver := fs.Bool("apiserver", false, "GET /version through the kubernetes Service ClusterIP (KUBERNETES_SERVICE_HOST)")
	url := fs.String("url", "", "URL to GET, e.g. http://svc.ns.svc.cluster.local:8080/ping")
	timeout := fs.Duration("timeout", 5*time.Second, "timeout of each request")
	wait := fs.Duration("wait", 0, "until a check passes, try again for up to this long (a Service's new endpoint reaches kube-proxy a moment after its pod is Ready); 0: try once")
	if err := fs.Parse(args); err != nil {
		return exitForFlagErr(err)
	}
	if fs.NArg() > 0 || (!*apiserver && *url == "") {
		fmt.Fprintln(stderr, "check: give --apiserver and/or --url, and no other arguments")
		return 2
	}
	var target *apiserverTarget
	if *apiserver {
		t, err := inClusterTarget(os.Getenv, saDir)
		if err != nil {
			fmt.Fprintln(stdout, "FAIL apiserver:", err)
			return 1
		}
		target = &t
	}
	return checkUntil(*wait, stdout, func(w io.Writer) int { return doCheck(target, *url, *timeout, w) })
}

// checkUntil runs check until it passes or wait has passed since the first
// try, whichever is first; every failed try's lines are printed, marked as
// retried, and the last try decides the exit code.
func checkUntil(wait time.Duration, stdout io.Writer, check func(io.Writer) int) int {
	deadline := time.Now().Add(wait)
	for try := 1; ; try++ {
		var out bytes.Buffer
		code := check(&out)
		if code == 0 || !time.Now().Add(retryEvery).Before(deadline) {
			stdout.Write(out.Bytes())
			return code
		}
		fmt.Fprintf(stdout, "try %d failed, trying again in %s (until %s):\n%s", try, retryEvery, deadline.Format(time.RFC3339), &out)
		time.Sleep(retryEvery)
	}
}

// doCheck runs each requested check once and prints one line per check.
func doCheck(target *apiserverTarget, url string, timeout time.Duration, stdout io.Writer) int {
	failed := false
	if target != nil {
		v, err := getVersion(target.keptOpenClient(timeout), *target)
		if err != nil {
			failed = true
			fmt.Fprintf(stdout, "FAIL apiserver %s: %v\n", target.URL, err)
		} else {
			fmt.Fprintf(stdout, "OK apiserver %s: version %s\n", target.URL, v)
		}
	}
	if url != "" {
		body, err := getURL(newConnClient(timeout), url)
		if err != nil {
			failed = true
			fmt.Fprintf(stdout, "FAIL url %s: %v\n", url, err)
		} else {
			fmt.Fprintf(stdout, "OK url %s: %s\n", url, body)
		}
	}
	if failed {
		return 1
	}
	return 0
}
