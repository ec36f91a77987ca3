package witness

import (
	"encoding/json"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fencecheck/fencecheck/witness/record"
)

// Admin serves GET /v1/witness/history, /healthz and /metrics, and the
// sink-crash nemesis's POST PathGate and PathProbe (crash.go).
func (wt *Witness) Admin() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+record.PathHistory, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(wt.History())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(wt.met.reg, promhttp.HandlerOpts{}))
	wt.crashAdmin(mux)
	wt.nemesisAdmin(mux)
	return mux
}

// metrics; each witness has its own registry so tests can run several.
type metrics struct {
	reg      *prometheus.Registry
	ops      *prometheus.CounterVec
	dropped  prometheus.Counter
	inFlight prometheus.Gauge
	latency  prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencecheck_witness_operations_total", Help: "Completed operations by type (ok, fail, info).",
		}, []string{"type"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fencecheck_witness_dropped_operations_total", Help: "Operations forwarded but not kept (history limit reached).",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencecheck_witness_in_flight", Help: "Requests forwarded and not yet answered.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "fencecheck_witness_operation_seconds", Help: "Invocation to completion, upstream time included.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18), // 100µs to ~13s
		}),
	}
	for _, t := range []record.Type{record.OK, record.Fail, record.Info} {
		m.ops.WithLabelValues(string(t)) // exported at 0 before the first one
	}
	m.reg.MustRegister(m.ops, m.dropped, m.inFlight, m.latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) done(op record.Operation, dropped bool) {
	m.inFlight.Dec()
	m.ops.WithLabelValues(string(op.Type)).Inc()
	m.latency.Observe(op.Completed.Sub(op.Invoked).Seconds())
	if dropped {
		m.dropped.Inc()
	}
}
