package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

const (
	saDir    = "/var/run/secrets/kubernetes.io/serviceaccount"
	cniFile  = "/etc/cni/net.d/10-kindnet.conflist"
	interval = 5 * time.Second
)

func main() {
	hostIP, podSubnet := os.Getenv("HOST_IP"), os.Getenv("POD_SUBNET")
	if hostIP == "" || podSubnet == "" {
		log.Fatal("kindnetd: HOST_IP and POD_SUBNET must be set (kind's CNI manifest sets them)")
	}
	c, err := newAPIClient()
	if err != nil {
		log.Fatalf("kindnetd: %v", err)
	}
	log.Printf("kindnetd stand-in: host %s, pod subnet %s", hostIP, podSubnet)
	for {
		if err := syncOnce(c, hostIP, podSubnet); err != nil {
			log.Printf("kindnetd: sync: %v (retrying in %s)", err, interval)
		}
		time.Sleep(interval) // a periodic reconcile loop, not synchronization
	}
}

func syncOnce(c *apiClient, hostIP, podSubnet string) error {
	data, err := c.get("/api/v1/nodes")
	if err != nil {
		return err
	}
	nodes, err := nodeList(data)
	if err != nil {
		return err
	}
	self, ok := findSelf(nodes, hostIP)
	if !ok {
		return fmt.Errorf("no node with InternalIP %s", hostIP)
	}
	if len(self.PodCIDRs) == 0 {
		return fmt.Errorf("node %s has no podCIDR yet", self.Name)
	}
	if err := ensureMasquerade(podSubnet); err != nil {
		return err
	}
	for _, r := range desiredRoutes(nodes, self.Name) {
		if out, err := exec.Command("ip", "route", "replace", r.Dst, "via", r.Via).CombinedOutput(); err != nil {
			return fmt.Errorf("ip route replace %s via %s: %v: %s", r.Dst, r.Via, err, out)
		}
	}
	conf, err := cniConfig(self.PodCIDRs)
	if err != nil {
		return err
	}
	return writeIfChanged(cniFile, conf)
}

func writeIfChanged(path string, data []byte) error {
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
		return nil
	}
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	log.Printf("kindnetd: writing %s", path)
	return os.Rename(tmp, path)
}

func iptables(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w", "5", "-t", "nat"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func ensureMasquerade(podSubnet string) error {
	if iptables("-L", "KIND-MASQ-AGENT", "-n") != nil {
		if err := iptables("-N", "KIND-MASQ-AGENT"); err != nil {
			return err
		}
	}
	jump := []string{"POSTROUTING", "-m", "addrtype", "!", "--dst-type", "LOCAL", "-m", "comment", "--comment", "kind-masq-agent", "-j", "KIND-MASQ-AGENT"}
	if iptables(append([]string{"-C"}, jump...)...) != nil {
		if err := iptables(append([]string{"-A"}, jump...)...); err != nil {
			return err
		}
	}
	for _, r := range masqRules(podSubnet) {
		check := append([]string{"-C"}, r[1:]...)
		if iptables(check...) != nil {
			if err := iptables(r...); err != nil {
				return err
			}
		}
	}
	return nil
}

type apiClient struct {
	base, token string
	http        *http.Client
}

func newAPIClient() (*apiClient, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, fmt.Errorf("KUBERNETES_SERVICE_HOST/PORT not set")
	}
	token, err := os.ReadFile(filepath.Join(saDir, "token"))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(saDir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &apiClient{
		base:  "https://" + net.JoinHostPort(host, port),
		token: strings.TrimSpace(string(token)),
		http:  &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}},
	}, nil
}

func (c *apiClient) get(path string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %.200s", path, resp.StatusCode, body)
	}
	return body, nil
}
