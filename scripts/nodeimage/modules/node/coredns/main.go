// Command coredns is CoreDNS v1.12.4 with only the plugins of the Corefile
// kubeadm 1.34 writes (cmd/kubeadm/app/phases/addons/dns/manifests.go):
// the stock build links every plugin, the cloud ones (route53, azure,
// clouddns) with their SDKs, 1278 packages to compile on a cold start for
// a DNS server that never uses them. CoreDNS's own plugin.cfg mechanism
// does the same thing by code generation; the directive order stays the
// stock one (dnsserver.Directives), so plugins chain as upstream.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics" // the "prometheus" directive
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
