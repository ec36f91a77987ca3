package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/contract"
)

// SinkHistory fetches GET /v1/history through the service proxy, and how
// many attempts the sink says it left out (contract.HeaderHistoryDropped).
func SinkHistory(ctx context.Context, client kubernetes.Interface, namespace, service, port string) ([]contract.Attempt, uint64, error) {
	b, hdr, err := ServiceGet(ctx, client, namespace, service, port, contract.PathHistory)
	if err != nil {
		return nil, 0, fmt.Errorf("sink history: %w", err)
	}
	var h contract.HistoryResponse
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, 0, fmt.Errorf("sink history: bad body: %w", err)
	}
	dropped, err := contract.ParseHistoryDropped(hdr.Get(contract.HeaderHistoryDropped))
	return h.Attempts, dropped, err
}

// SinkRecords reads the final record of each key; a key only ever
// rejected has no record and is left out.
func SinkRecords(ctx context.Context, client kubernetes.Interface, namespace, service, port string, keys []string) ([]contract.Record, error) {
	out := []contract.Record{}
	for _, k := range keys {
		b, err := client.CoreV1().Services(namespace).ProxyGet("http", service, port, contract.PathRecords+url.PathEscape(k), nil).DoRaw(ctx)
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
