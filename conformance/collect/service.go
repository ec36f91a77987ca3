package collect

import (
	"context"
	"fmt"
	"github.com/fencecheck/fencecheck/contract"
	"io"
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ServiceGet GETs path of a Service through the apiserver's service proxy,
// like ProxyGet, but keeps the answer's headers (DoRaw drops them, and the
// sink says in one that its history is incomplete).
func ServiceGet(ctx context.Context, client kubernetes.Interface, namespace, service, port, path, token string) ([]byte, http.Header, error) {
	rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil || rc.Client == nil {
		return nil, nil, fmt.Errorf("service proxy %s/%s:%s: the Kubernetes client has no HTTP transport (%T)", namespace, service, port, client.CoreV1().RESTClient())
	}
	u := serviceRequest(client, namespace, service, port, path, "").URL()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	if token != "" {
		req.Header.Set(contract.HeaderToken, token)
	}
	resp, err := rc.Client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("service proxy %s/%s:%s%s: %w", namespace, service, port, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("service proxy %s/%s:%s%s: reading body: %w", namespace, service, port, path, err)
	case resp.StatusCode != http.StatusOK:
		return nil, nil, fmt.Errorf("service proxy %s/%s:%s%s: status %d: %.200q", namespace, service, port, path, resp.StatusCode, b)
	}
	return b, resp.Header, nil
}
