package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fencecheck/fencecheck/contract"
)

func TestHistoryWithDroppedReadsTheHeader(t *testing.T) {
	for hdr, want := range map[string]uint64{"": 0, "3": 3, "bogus": 0} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hdr != "" {
				w.Header().Set(contract.HeaderHistoryDropped, hdr)
			}
			w.Write([]byte(`{"attempts":[{"seq":1,"op":"fence","epoch":1}]}`))
		}))
		as, got, err := (&Client{BaseURL: srv.URL}).HistoryWithDropped(context.Background())
		srv.Close()
		if hdr == "bogus" {
			if err == nil {
				t.Errorf("a bad header was taken for %d", got)
			}
			continue
		}
		if err != nil || got != want || len(as) != 1 {
			t.Errorf("header %q: %d attempts, dropped %d, %v; want %d", hdr, len(as), got, err, want)
		}
	}
}
