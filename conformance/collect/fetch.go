package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fencecheck/fencecheck/contract"
	refsink "github.com/fencecheck/fencecheck/fixtures/sink"
)

// SinkHistory fetches GET /v1/history through the service proxy, with the
// sink's admin token.
func SinkHistory(ctx context.Context, client kubernetes.Interface, namespace, service, port, token string) ([]contract.Attempt, error) {
	b, err := ServiceGet(client, namespace, service, port, contract.PathHistory, token).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("sink history via %s/%s:%s: %w", namespace, service, port, err)
	}
	var h contract.HistoryResponse
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("sink history: bad body: %w", err)
	}
	return h.Attempts, nil
}

// SinkRecords reads the final record of each key; a key only ever
// rejected has no record and is left out.
func SinkRecords(ctx context.Context, client kubernetes.Interface, namespace, service, port, token string, keys []string) ([]contract.Record, error) {
	out := []contract.Record{}
	for _, k := range keys {
		b, err := ServiceGet(client, namespace, service, port, contract.PathRecords+url.PathEscape(k), token).DoRaw(ctx)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("sink record %q: %w", k, err)
		}
		var r contract.Record
		if err := json.Unmarshal(b, &r); err != nil {
			return out, fmt.Errorf("sink record %q: bad body: %w", k, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// ServiceGet is a GET of path on an http Service through the apiserver's
// service proxy, carrying the sink token in sink.HeaderToken: the proxy
// keeps the caller's Authorization header for itself and never forwards it.
func ServiceGet(client kubernetes.Interface, namespace, service, port, path, token string) *rest.Request {
	req := client.CoreV1().RESTClient().Get().Namespace(namespace).Resource("services").
		Name(net.JoinSchemeNamePort("http", service, port)).SubResource("proxy").Suffix(path)
	if token != "" {
		req = req.SetHeader(refsink.HeaderToken, token)
	}
	return req
}

// PodJSON fetches a JSON document from a pod through the pod proxy (the
// reconciler's /status on :8081).
func PodJSON(ctx context.Context, client kubernetes.Interface, namespace, pod, port, path string) (json.RawMessage, error) {
	b, err := client.CoreV1().Pods(namespace).ProxyGet("http", pod, port, path, nil).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s/%s:%s%s: %w", namespace, pod, port, path, err)
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%s/%s:%s%s: not JSON: %.200q", namespace, pod, port, path, b)
	}
	return b, nil
}
