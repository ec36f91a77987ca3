package witness

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/contract/client"
)

// BenchmarkPut measures what the witness adds to a write: PUTs straight to
// an upstream and through a witness to the same upstream, alternating in
// one loop so both meet the same machine load. Upstreams: the reference
// sink (bbolt, one fsync per commit) and echo (a fixed answer, so the
// witness's own cost is not hidden in the store's). Reported: both means,
// their ratio, and the p50 and p99 the witness adds (witness minus direct).
// bench/witness.sh runs it and takes medians over rounds.
func BenchmarkPut(b *testing.B) {
	for _, up := range []struct {
		name  string
		start func(b *testing.B) string
	}{
		{"sink", func(b *testing.B) string { return startSink(b).URL }},
		{"echo", func(b *testing.B) string {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"result":"OK","epoch":1}`))
			}))
			b.Cleanup(srv.Close)
			return srv.URL
		}},
	} {
		b.Run(up.name, func(b *testing.B) {
			url := up.start(b)
			wt, err := New(Config{Upstream: url})
			if err != nil {
				b.Fatal(err)
			}
			proxy := httptest.NewServer(wt)
			b.Cleanup(proxy.Close)
			direct, via := benchClient(b, url), benchClient(b, proxy.URL)
			ctx := context.Background()
			if _, _, err := direct.Fence(ctx, 1); err != nil {
				b.Fatal(err)
			}
			put := func(c *client.Client, tag string, i int) time.Duration {
				t0 := time.Now()
				wr, _, err := c.Put(ctx, fmt.Sprintf("k%d", i%64), []byte("value"), 1, fmt.Sprintf("%s-%d", tag, i))
				d := time.Since(t0)
				if err != nil || wr.Result != contract.ResultOK {
					b.Fatalf("%s put %d: %+v %v", tag, i, wr, err)
				}
				return d
			}
			put(direct, "warm-d", 0) // connections open before timing
			put(via, "warm-w", 0)
			dd, dw := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%2 == 0 { // alternate who goes first
					dd = append(dd, put(direct, "d", i))
					dw = append(dw, put(via, "w", i))
				} else {
					dw = append(dw, put(via, "w", i))
					dd = append(dd, put(direct, "d", i))
				}
			}
			b.StopTimer()
			md, mw := mean(dd), mean(dw)
			b.ReportMetric(md, "direct_ns/op")
			b.ReportMetric(mw, "witness_ns/op")
			b.ReportMetric(mw/md, "ratio")
			b.ReportMetric(float64(quantile(dw, 0.5)-quantile(dd, 0.5))/1e3, "p50_added_µs")
			b.ReportMetric(float64(quantile(dw, 0.99)-quantile(dd, 0.99))/1e3, "p99_added_µs")
		})
	}
}

func benchClient(b *testing.B, url string) *client.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	b.Cleanup(tr.CloseIdleConnections)
	return &client.Client{BaseURL: url, HTTP: &http.Client{Transport: tr}}
}

func mean(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum) / float64(len(ds))
}

// quantile of ds (sorted in place).
func quantile(ds []time.Duration, q float64) time.Duration {
	slices.Sort(ds)
	return ds[int(q*float64(len(ds)-1))]
}
