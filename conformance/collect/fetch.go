package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fencecheck/fencecheck/contract"
)

// SinkHistory fetches GET /v1/history through the service proxy with the
// sink's admin token, and how
// many attempts the sink says it left out (contract.HeaderHistoryDropped).
func SinkHistory(ctx context.Context, client kubernetes.Interface, namespace, service, port, token string) ([]contract.Attempt, uint64, error) {
	b, hdr, err := ServiceGet(ctx, client, namespace, service, port, contract.PathHistory, token)
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
// rejected has no record and is left out. It asks for every key in one
// bulk read (contract.PathRecordsBulk, a reference-sink extra); a sink
// without it (404, 405) is read key by key, recordReaders at a time.
func SinkRecords(ctx context.Context, client kubernetes.Interface, namespace, service, port, token string, keys []string) ([]contract.Record, error) {
	if len(keys) == 0 {
		return []contract.Record{}, nil
	}
	req := serviceRequest(client, namespace, service, port, contract.PathRecordsBulk, token)
	for _, k := range keys {
		req = req.Param(contract.QueryKey, k)
	}
	b, err := req.DoRaw(ctx)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
		return recordsOneByOne(ctx, client, namespace, service, port, token, keys)
	case err != nil:
		return nil, fmt.Errorf("sink records (%d keys, one read): %w", len(keys), err)
	}
	var r contract.RecordsResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("sink records: bad body: %w", err)
	}
	if r.Records == nil {
		return nil, fmt.Errorf("sink records: the body has no records list: %.200q", b)
	}
	return r.Records, nil
}

// recordReaders is how many key-by-key reads are in flight at once.
const recordReaders = 8

// recordsOneByOne reads each key with GET /v1/records/{key}, the
// contract's read, a few at a time; the records keep the keys' order.
func recordsOneByOne(ctx context.Context, client kubernetes.Interface, namespace, service, port, token string, keys []string) ([]contract.Record, error) {
	recs := make([]*contract.Record, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, recordReaders)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if strings.Contains(k, "/") {
				errs[i] = fmt.Errorf("sink record %q: a key with a / cannot be read key by key through the service proxy (client-go escapes the %%2F again); the bulk read can", k)
				return
			}
			// Unescaped: client-go escapes the proxy path itself.
			b, err := serviceRequest(client, namespace, service, port, contract.PathRecords+k, token).DoRaw(ctx)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				errs[i] = fmt.Errorf("sink record %q: %w", k, err)
			default:
				var r contract.Record
				if err := json.Unmarshal(b, &r); err != nil {
					errs[i] = fmt.Errorf("sink record %q: bad body: %w", k, err)
				} else {
					recs[i] = &r
				}
			}
		}()
	}
	wg.Wait()
	out := []contract.Record{}
	for i, r := range recs {
		if errs[i] != nil {
			return out, errs[i]
		}
		if r != nil {
			out = append(out, *r)
		}
	}
	return out, nil
}

// serviceRequest is a GET of path on an http Service through the
// apiserver's service proxy, carrying the sink token in contract.HeaderToken:
// the proxy keeps the caller's Authorization header for itself and never
// forwards it.
func serviceRequest(client kubernetes.Interface, namespace, service, port, path, token string) *rest.Request {
	req := client.CoreV1().RESTClient().Get().Namespace(namespace).Resource("services").
		Name(net.JoinSchemeNamePort("http", service, port)).SubResource("proxy").Suffix(path)
	if token != "" {
		req = req.SetHeader(contract.HeaderToken, token)
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
