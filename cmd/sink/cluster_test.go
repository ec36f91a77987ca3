//go:build cluster

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/certify"
	"github.com/fencecheck/fencecheck/contract"
)

// On the kind cluster: deploy manifests/sink into a fresh namespace and
// certify it on every profile, restarting it with a rollout (the PVC must
// keep the floor, the records and the idempotency keys). The sink is reached
// through `kubectl proxy` and the Service proxy, which follows the Service to
// whichever pod is ready. Needs: make kind-up images (KUBECONFIG set).
//
// The negative control (--broken=forget-floor appended to the args) proves
// the restart really happens: it must fail durability/floor-survives-restart
// and -kill.
func TestCertifySinkOnCluster(t *testing.T) {
	for _, c := range []struct {
		name     string
		extraArg string
		wantFail []string
	}{
		{"reference", "", nil},
		{"forget-floor", "--broken=forget-floor", []string{"durability/floor-survives-restart", "durability/floor-survives-kill"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := deployAndCertify(t, c.extraArg)
			if f := rep.Failed(); strings.Join(f, ",") != strings.Join(c.wantFail, ",") {
				t.Fatalf("failed %v, want %v", f, c.wantFail)
			}
			// The sink is not declared disposable (certify's domain profile
			// runs in certify's own tests, on the in-process sink and the
			// PostgreSQL binary): every other profile runs in full, domain is NOT RUN
			// with its reason.
			if rep.NotRun[certify.ProfileDomain] == "" {
				t.Errorf("the domain profile ran or has no NOT RUN reason: %v", rep.NotRun)
			}
			ran := slices.DeleteFunc(slices.Clone(certify.AllProfiles), func(p string) bool { return p == certify.ProfileDomain })
			if n := len(certify.Checks(ran)); len(rep.Results) != n {
				t.Fatalf("%d checks ran, want %d (the checks of %v)", len(rep.Results), n, ran)
			}
		})
	}
}

func deployAndCertify(t *testing.T, extraArg string) certify.Report {
	t.Helper()
	if os.Getenv("KUBECONFIG") == "" {
		t.Fatal("KUBECONFIG is not set: run `make kind-up images` (the Makefile exports KUBECONFIG)")
	}
	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command("kubectl", args...).CombinedOutput()
		return string(out), err
	}
	if out, err := kubectl("get", "--raw", "/readyz"); err != nil {
		t.Fatalf("the cluster is not reachable (run `make kind-up images`): %v %s", err, out)
	}
	ns := fmt.Sprintf("sink-certify-%d", time.Now().Unix())
	if out, err := kubectl("create", "namespace", ns); err != nil {
		t.Fatalf("create namespace: %v %s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := kubectl("-n", ns, "logs", "deploy/sink", "--tail=50")
			t.Logf("sink logs:\n%s", out)
		}
		kubectl("delete", "namespace", ns, "--wait=false")
	})
	// The sink authenticates: certify writes with the writer token, sent in
	// X-Fencecheck-Sink-Token since the proxies keep Authorization.
	writer := "writer-" + fmt.Sprint(time.Now().UnixNano())
	if out, err := kubectl("-n", ns, "create", "secret", "generic", "fencecheck-sink-tokens",
		"--from-literal=writer-token="+writer, "--from-literal=admin-token=admin-"+fmt.Sprint(time.Now().UnixNano())); err != nil {
		t.Fatalf("create the token Secret: %v %s", err, out)
	}
	if out, err := kubectl("-n", ns, "apply", "-f", "../../manifests/sink/"); err != nil {
		t.Fatalf("apply: %v %s", err, out)
	}
	if extraArg != "" {
		patch := fmt.Sprintf(`[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":%q}]`, extraArg)
		if out, err := kubectl("-n", ns, "patch", "deploy/sink", "--type=json", "-p", patch); err != nil {
			t.Fatalf("patch args: %v %s", err, out)
		}
	}
	if out, err := kubectl("-n", ns, "rollout", "status", "deploy/sink", "--timeout=180s"); err != nil {
		t.Fatalf("the sink did not become ready (image fencecheck/sink:dev loaded? run `make images`): %v %s", err, out)
	}

	ctx, cancel := context.WithCancel(context.Background())
	proxy := exec.CommandContext(ctx, "kubectl", "proxy", "--port=0")
	stdout, _ := proxy.StdoutPipe()
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); proxy.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n') // "Starting to serve on 127.0.0.1:PORT"
	if err != nil || !strings.Contains(line, "Starting to serve on ") {
		t.Fatalf("kubectl proxy: %q %v", line, err)
	}
	addr := strings.TrimSpace(line[strings.Index(line, "on ")+3:])
	sinkURL := fmt.Sprintf("http://%s/api/v1/namespaces/%s/services/sink:8080/proxy", addr, ns)

	restart := func(ctx context.Context) error {
		if out, err := kubectl("-n", ns, "rollout", "restart", "deploy/sink"); err != nil {
			return fmt.Errorf("%v %s", err, out)
		}
		if out, err := kubectl("-n", ns, "rollout", "status", "deploy/sink", "--timeout=180s"); err != nil {
			return fmt.Errorf("%v %s", err, out)
		}
		return nil
	}
	// SIGKILL: a forced delete sends no SIGTERM; it returns once the pod
	// is gone, and certify waits for the replacement to answer.
	kill := func(ctx context.Context) error {
		if out, err := kubectl("-n", ns, "delete", "pod", "-l", "app=fencecheck-sink", "--grace-period=0", "--force", "--wait=true"); err != nil {
			return fmt.Errorf("%v %s", err, out)
		}
		return nil
	}
	var progress strings.Builder
	hc, err := certify.NewHTTPClient(certify.ClientOptions{Timeout: 30 * time.Second, Headers: []string{contract.HeaderToken + ": " + writer}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := certify.Run(ctx, certify.Config{SinkURL: sinkURL, Restart: restart, Kill: kill, RestartTimeout: 4 * time.Minute,
		Progress: &progress, HTTP: hc})
	t.Logf("certify:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
