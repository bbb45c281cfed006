package broker

import (
	"context"
	"strconv"

	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/runtime"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus metrics of a broker and its bridge:
// executions by outcome and their durations, bridge calls by operation
// and outcome, changes by decision, refusals by rule, and the worker
// pool's size.
type Metrics struct {
	executions   *prometheus.CounterVec
	duration     prometheus.Histogram
	calls        *prometheus.CounterVec
	callDuration prometheus.Histogram
	changes      *prometheus.CounterVec
	rejections   *prometheus.CounterVec
}

// NewMetrics registers the metrics with reg; pool, when not nil, is the
// worker pool whose size they report.
func NewMetrics(reg prometheus.Registerer, pool *runtime.Pool) *Metrics {
	m := &Metrics{
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubecode_executions_total",
			Help: "Scripts executed, by outcome: ok, planned (changes planned), applied (an approved plan), diverged, or the error's kind (timeout, limit, tool, runtime, type, ...)."},
			[]string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kubecode_execution_duration_seconds",
			Help: "How long scripts ran.", Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubecode_bridge_calls_total",
			Help: "Operation calls through the bridge, by operation, outcome (ok, error, invalid, unknown) and HTTP status of failures."},
			[]string{"operation", "outcome", "status"}),
		callDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kubecode_bridge_call_duration_seconds",
			Help: "How long operation calls took.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubecode_changes_total",
			Help: "Changing calls, by the policy's decision: planned, applied, refused, diverged, failed."}, []string{"decision"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubecode_rejections_total",
			Help: "Changes the policy refused, by rule."}, []string{"rule"}),
	}
	reg.MustRegister(m.executions, m.duration, m.calls, m.callDuration, m.changes, m.rejections)
	if pool != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kubecode_workers_busy", Help: "Worker processes running a script."},
				func() float64 { return float64(pool.Busy()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kubecode_workers_idle", Help: "Warm worker processes waiting for a script."},
				func() float64 { return float64(pool.Warm()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kubecode_workers_started_total", Help: "Worker processes started."},
				func() float64 { return float64(pool.Started()) }))
	}
	return m
}

// ObserveCall counts one bridge call; it is a bridge.Options.Observe.
func (m *Metrics) ObserveCall(_ context.Context, e *bridge.Entry) {
	status := ""
	if e.Status != 0 {
		status = strconv.Itoa(e.Status)
	}
	op := e.Operation
	if e.Outcome == "unknown" { // names nobody serves are not labels
		op = "unknown"
	}
	m.calls.WithLabelValues(op, e.Outcome, status).Inc()
	m.callDuration.Observe(e.Duration.Seconds())
	if e.Decision != "" {
		m.changes.WithLabelValues(e.Decision).Inc()
	}
	if e.Decision == "refused" && e.Rule != "" {
		m.rejections.WithLabelValues(e.Rule).Inc()
	}
}

// observe counts one execution.
func (m *Metrics) observe(ex *Execution) {
	if m == nil || ex == nil || ex.Result == nil {
		return
	}
	m.executions.WithLabelValues(outcome(ex)).Inc()
	m.duration.Observe(ex.Duration.Seconds())
}

// outcome names how an execution ended.
func outcome(ex *Execution) string {
	switch {
	case ex.Error != nil:
		return string(ex.Error.Kind)
	case ex.Diverged != "":
		return "diverged"
	case ex.Approved != nil:
		return "applied"
	case ex.Plan != nil:
		return "planned"
	}
	return "ok"
}
