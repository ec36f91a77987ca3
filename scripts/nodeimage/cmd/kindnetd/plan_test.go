package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

const nodesJSON = `{"items":[
 {"metadata":{"name":"cp"},"spec":{"podCIDR":"10.244.0.0/24","podCIDRs":["10.244.0.0/24"]},"status":{"addresses":[{"type":"InternalIP","address":"172.18.0.2"},{"type":"Hostname","address":"cp"}]}},
 {"metadata":{"name":"w1"},"spec":{"podCIDR":"10.244.1.0/24"},"status":{"addresses":[{"type":"InternalIP","address":"172.18.0.3"}]}},
 {"metadata":{"name":"w2"},"spec":{},"status":{"addresses":[{"type":"InternalIP","address":"172.18.0.4"}]}}
]}`

func TestPlanFromNodeList(t *testing.T) {
	nodes, err := nodeList([]byte(nodesJSON))
	if err != nil {
		t.Fatal(err)
	}
	self, ok := findSelf(nodes, "172.18.0.3")
	if !ok || self.Name != "w1" {
		t.Fatalf("self = %+v, %v", self, ok)
	}
	got := desiredRoutes(nodes, self.Name)
	want := []route{{Dst: "10.244.0.0/24", Via: "172.18.0.2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("routes = %v, want %v (no route to self, none for a node without podCIDR)", got, want)
	}
	if _, ok := findSelf(nodes, "172.18.0.9"); ok {
		t.Error("found a node for an unknown IP")
	}
}

func TestCNIConfig(t *testing.T) {
	data, err := cniConfig([]string{"fd00::/64", "10.244.1.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Plugins []struct {
			Type string `json:"type"`
			IPAM struct {
				Ranges [][]map[string]string `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Plugins) != 2 || c.Plugins[0].Type != "ptp" || c.Plugins[1].Type != "portmap" {
		t.Fatalf("plugins = %+v", c.Plugins)
	}
	if r := c.Plugins[0].IPAM.Ranges; len(r) != 1 || r[0][0]["subnet"] != "10.244.1.0/24" {
		t.Errorf("ranges = %v", r)
	}
	if _, err := cniConfig(nil); err == nil {
		t.Error("want error without a podCIDR")
	}
}

func TestMasqRulesKeepPodNetwork(t *testing.T) {
	r := masqRules("10.244.0.0/16")
	if len(r) != 2 || r[0][len(r[0])-1] != "RETURN" || r[0][3] != "10.244.0.0/16" || r[1][len(r[1])-1] != "MASQUERADE" {
		t.Errorf("rules = %v: pod network must RETURN before MASQUERADE", r)
	}
}

func TestBadNodeList(t *testing.T) {
	if _, err := nodeList([]byte("{")); err == nil {
		t.Error("want decode error")
	}
}
