package certify_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/certify"
	sink "github.com/fencecheck/fencecheck/fixtures/sink"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// An HTTPS sink with a private CA that wants a bearer token: certified
// with --token-file and --ca-file, refused without either.
func TestAuthenticatedHTTPSSink(t *testing.T) {
	s := wrapped(t, func(h http.Handler) http.Handler { return sink.RequireToken(h, "s3cret") })
	target, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(target)) // TLS in front
	t.Cleanup(ts.Close)
	ca := writeFile(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})))
	token := writeFile(t, "token", "s3cret\n")
	wrong := writeFile(t, "wrong", "guess")

	run := func(o certify.ClientOptions) (certify.Report, error) {
		hc, err := certify.NewHTTPClient(o)
		if err != nil {
			t.Fatal(err)
		}
		return certify.Run(context.Background(), certify.Config{SinkURL: ts.URL, Profiles: []string{"core"}, HTTP: hc, Seed: 4})
	}
	rep, err := run(certify.ClientOptions{TokenFile: token, CAFile: ca})
	if err != nil || !rep.ProfilePassed("core") {
		t.Fatalf("with token and CA: %v, failed %v", err, rep.Failed())
	}
	if _, err := run(certify.ClientOptions{Headers: []string{"Authorization: Bearer s3cret"}, CAFile: ca}); err != nil {
		t.Fatalf("with --header: %v", err)
	}
	for name, o := range map[string]certify.ClientOptions{
		"no token":    {CAFile: ca},
		"wrong token": {TokenFile: wrong, CAFile: ca},
	} {
		if _, err := run(o); err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "credentials") {
			t.Errorf("%s: want a 401 naming credentials, got %v", name, err)
		}
	}
	if _, err := run(certify.ClientOptions{TokenFile: token}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: want a certificate error, got %v", err)
	}
}

func TestHTTPClientBadInput(t *testing.T) {
	notPEM := writeFile(t, "ca.pem", "not a certificate")
	empty := writeFile(t, "token", " \n")
	for _, c := range []struct {
		o    certify.ClientOptions
		want string
	}{
		{certify.ClientOptions{Headers: []string{"no colon"}}, `want "Name: value"`},
		{certify.ClientOptions{Headers: []string{": value"}}, `want "Name: value"`},
		{certify.ClientOptions{TokenFile: "/nonexistent/token"}, "--token-file"},
		{certify.ClientOptions{TokenFile: empty}, "is empty"},
		{certify.ClientOptions{CAFile: notPEM}, "no PEM certificate"},
	} {
		if _, err := certify.NewHTTPClient(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: want an error with %q, got %v", c.o, c.want, err)
		}
	}
}

// selfSigned writes a certificate and key for 127.0.0.1.
func selfSigned(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sink"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))),
		writeFile(t, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))
}

// cmd/sink --tls-cert --tls-key --token-file, certified by the CLI with
// --ca-file and --token-file; without the token the CLI exits 3.
func TestCLIAuthenticatedHTTPSSink(t *testing.T) {
	sinkBin, _ := binaries(t)
	cert, key := selfSigned(t)
	token := writeFile(t, "token", "s3cret")
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(sinkBin, "--addr", addr, "--data", t.TempDir(), "--tls-cert", cert, "--tls-key", key, "--token-file", token)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("sink log:\n%s", log.String())
		}
	})
	sinkURL := "https://" + addr
	hc, err := certify.NewHTTPClient(certify.ClientOptions{CAFile: cert, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, hc, sinkURL, 30*time.Second)
	code, out := runCLI(t, "certify", "--sink-url", sinkURL, "--profile", "core", "--ca-file", cert, "--token-file", token)
	if code != 0 {
		t.Fatalf("with --ca-file and --token-file: exit %d\n%s", code, out)
	}
	code, out = runCLI(t, "certify", "--sink-url", sinkURL, "--profile", "core", "--ca-file", cert)
	if code != 3 || !strings.Contains(out, "401") {
		t.Fatalf("without the token: exit %d, want 3 with the 401\n%s", code, out)
	}
	code, out = runCLI(t, "certify", "--sink-url", sinkURL, "--profile", "core", "--header", "oops")
	if code != 2 || !strings.Contains(out, "Name: value") {
		t.Fatalf("a bad --header: exit %d, want 2\n%s", code, out)
	}
}
