package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// apiserverTarget is where and how to reach the apiserver from a pod: the
// `kubernetes` Service ClusterIP from the environment and the service
// account's token and CA.
type apiserverTarget struct {
	URL   string // https://host:port
	Token string
	TLS   *tls.Config
}

func inClusterTarget(env func(string) string, dir string) (apiserverTarget, error) {
	host, port := env("KUBERNETES_SERVICE_HOST"), env("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return apiserverTarget{}, fmt.Errorf("KUBERNETES_SERVICE_HOST/PORT not set: not running in a pod")
	}
	token, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		return apiserverTarget{}, fmt.Errorf("service account token: %w", err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return apiserverTarget{}, fmt.Errorf("service account CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return apiserverTarget{}, fmt.Errorf("no certificates in %s/ca.crt", dir)
	}
	return apiserverTarget{
		URL:   "https://" + net.JoinHostPort(host, port),
		Token: strings.TrimSpace(string(token)),
		TLS:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}, nil
}

// keptOpenClient reuses one connection (HTTP/2 when offered) across requests.
func (a apiserverTarget) keptOpenClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		TLSClientConfig: a.TLS, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 1,
	}}
}

// getVersion GETs /version and returns its gitVersion.
func getVersion(c *http.Client, a apiserverTarget) (string, error) {
	req, err := http.NewRequest(http.MethodGet, a.URL+"/version", nil)
	if err != nil {
		return "", err
	}
	if a.Token != "" {
		req.Header.Set("Authorization", "Bearer "+a.Token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /version: HTTP %d: %.200s", resp.StatusCode, body)
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.GitVersion == "" {
		return "", fmt.Errorf("GET /version: not a version document: %.200s", body)
	}
	return v.GitVersion, nil
}

// newConnClient opens a new connection for every request.
func newConnClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

// getURL GETs url and returns the body; non-2xx is an error.
func getURL(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", err
	}
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("GET %s: HTTP %d: %.200s", url, resp.StatusCode, body)
	}
	return strings.TrimSpace(string(body)), nil
}
