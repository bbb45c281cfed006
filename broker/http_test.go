package broker_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/broker"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHTTPEndpoints: /healthz and /readyz answer, and /metrics counts
// what executions did: by outcome, calls by operation, refusals by rule.
func TestHTTPEndpoints(t *testing.T) {
	a, err := kubernetes.New(cp.Admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	metrics := broker.NewMetrics(reg, nil)
	br := bridge.New([]bridge.Provider{a}, &bridge.Options{Policy: policy.Policy{Mode: policy.ModeReadOnly}, Observe: metrics.ObserveCall})
	t.Cleanup(func() { _ = br.Close() })
	b := broker.New(br, &broker.Options{Logger: slog.New(slog.DiscardHandler), Metrics: metrics})
	srv := httptest.NewServer(b.HTTPHandler(&broker.HTTPOptions{Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}))
	t.Cleanup(srv.Close)
	if code, body := get(t, srv.URL+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for code, body := get(t, srv.URL+"/readyz"); code != 200 || body != "ok\n"; code, body = get(t, srv.URL+"/readyz") {
		if code != 503 || time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cs := connect(t, b)
	callText(t, cs, "execute_code", map[string]any{"code": "return (await tools.kubernetes.namespaces.list()).length"})
	callText(t, cs, "execute_code", map[string]any{"code": "await tools.kubernetes.namespaces.delete({name: 'shop'})"})
	callText(t, cs, "execute_code", map[string]any{"code": "while (true) {}", "timeout": 0.3})
	_, body := get(t, srv.URL+"/metrics")
	for _, want := range []string{
		`kubecode_executions_total{outcome="ok"} 1`,
		`kubecode_executions_total{outcome="tool"} 1`,
		`kubecode_executions_total{outcome="timeout"} 1`,
		`kubecode_bridge_calls_total{operation="kubernetes.namespaces.list",outcome="ok",status=""} 1`,
		`kubecode_bridge_calls_total{operation="kubernetes.namespaces.delete",outcome="error",status=""} 1`,
		`kubecode_changes_total{decision="refused"} 1`,
		`kubecode_rejections_total{rule="read-only"} 1`,
		`kubecode_execution_duration_seconds_count 3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}
