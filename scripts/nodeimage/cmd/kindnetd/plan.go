// Command kindnetd is a small stand-in for kind's kindnetd (which cannot be
// fetched offline), published under kind's kindnetd image name so kind's
// default CNI manifest runs unchanged. On its node it writes a ptp +
// host-local + portmap CNI config for the node's podCIDR, routes every other
// node's podCIDR via that node's IP, and masquerades pod traffic leaving the
// pod network. No NetworkPolicy.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"sort"
)

// node is the part of a Node object this program needs.
type node struct {
	Name       string
	InternalIP string
	PodCIDRs   []string
}

type route struct {
	Dst, Via string
}

// findSelf returns the node whose InternalIP is hostIP.
func findSelf(nodes []node, hostIP string) (node, bool) {
	for _, n := range nodes {
		if n.InternalIP == hostIP {
			return n, true
		}
	}
	return node{}, false
}

// desiredRoutes: one route per podCIDR of every other node, via its IP.
func desiredRoutes(nodes []node, self string) []route {
	var rs []route
	for _, n := range nodes {
		if n.Name == self || n.InternalIP == "" {
			continue
		}
		for _, c := range n.PodCIDRs {
			if _, _, err := net.ParseCIDR(c); err == nil && net.ParseIP(n.InternalIP).To4() != nil && isV4CIDR(c) {
				rs = append(rs, route{Dst: c, Via: n.InternalIP})
			}
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Dst < rs[j].Dst })
	return rs
}

func isV4CIDR(c string) bool {
	ip, _, err := net.ParseCIDR(c)
	return err == nil && ip.To4() != nil
}

// cniConfig renders the CNI conflist for this node's IPv4 podCIDR.
func cniConfig(podCIDRs []string) ([]byte, error) {
	var ranges [][]map[string]string
	for _, c := range podCIDRs {
		if isV4CIDR(c) {
			ranges = append(ranges, []map[string]string{{"subnet": c}})
		}
	}
	if len(ranges) == 0 {
		return nil, fmt.Errorf("no IPv4 podCIDR in %v", podCIDRs)
	}
	conf := map[string]any{
		"cniVersion": "0.3.1",
		"name":       "kindnet",
		"plugins": []any{
			map[string]any{
				"type":   "ptp",
				"ipMasq": false,
				"mtu":    1500,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": "/run/cni-ipam-state",
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"ranges":  ranges,
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// masqRules are the iptables nat rules: pod traffic to anything outside the
// pod network (and not local) leaves with the node's address.
func masqRules(podSubnet string) [][]string {
	return [][]string{
		{"-A", "KIND-MASQ-AGENT", "-d", podSubnet, "-m", "comment", "--comment", "kind-masq-agent: pod network is not masqueraded", "-j", "RETURN"},
		{"-A", "KIND-MASQ-AGENT", "-m", "comment", "--comment", "kind-masq-agent: outbound traffic is masqueraded", "-j", "MASQUERADE"},
	}
}

// nodeList decodes the apiserver's NodeList JSON.
func nodeList(data []byte) ([]node, error) {
	var l struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				PodCIDR  string   `json:"podCIDR"`
				PodCIDRs []string `json:"podCIDRs"`
			} `json:"spec"`
			Status struct {
				Addresses []struct {
					Type    string `json:"type"`
					Address string `json:"address"`
				} `json:"addresses"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("decode NodeList: %w", err)
	}
	var out []node
	for _, it := range l.Items {
		n := node{Name: it.Metadata.Name, PodCIDRs: it.Spec.PodCIDRs}
		if len(n.PodCIDRs) == 0 && it.Spec.PodCIDR != "" {
			n.PodCIDRs = []string{it.Spec.PodCIDR}
		}
		for _, a := range it.Status.Addresses {
			if a.Type == "InternalIP" && net.ParseIP(a.Address).To4() != nil {
				n.InternalIP = a.Address
				break
			}
		}
		out = append(out, n)
	}
	return out, nil
}
