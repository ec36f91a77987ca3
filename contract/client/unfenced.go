package client

import (
	"context"

	"github.com/fencecheck/fencecheck/contract"
)

// PutUnfenced writes value under key WITHOUT the epoch header. It exists
// only for the reconciler's --fencing=off negative control (the case
// study's UnsafePod); a correct writer always uses Put.
func (c *Client) PutUnfenced(ctx context.Context, key string, value []byte, idemKey string) (contract.WriteResponse, Reply, error) {
	return c.put(ctx, key, value, map[string]string{}, idemKey)
}
