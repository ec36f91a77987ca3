package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/fencecheck/fencecheck/contract"
)

// PutUnfenced writes value under key WITHOUT the epoch header. It exists
// only for the reconciler's --fencing=off negative control (the case
// study's UnsafePod); a correct writer always uses Put.
func (c *Client) PutUnfenced(ctx context.Context, key string, value []byte, idemKey string) (contract.WriteResponse, Reply, error) {
	h := map[string]string{}
	if idemKey != "" {
		h[contract.HeaderIdempotencyKey] = idemKey
	}
	rep, err := c.do(ctx, http.MethodPut, contract.RecordPath(key), value, h)
	if err != nil {
		return contract.WriteResponse{}, rep, err
	}
	var wr contract.WriteResponse
	_ = json.Unmarshal(rep.Body, &wr)
	return wr, rep, nil
}
