package broker_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/broker"
)

func toolNames(t *testing.T, b *broker.Broker) ([]string, func(tool string, args map[string]any) (string, bool)) {
	t.Helper()
	cs := connect(t, b)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names, func(tool string, args map[string]any) (string, bool) { return callText(t, cs, tool, args) }
}

// TestDirectMode serves every operation as a tool of its own through the
// same bridge: lists as tables, gets as objects, Secrets redacted.
func TestDirectMode(t *testing.T) {
	names, call := toolNames(t, newBrokerMode(t, cp.Admin, broker.ModeDirect))
	for _, want := range []string{"kubernetes_pods_list", "kubernetes_pods_logs", "kubernetes_deployments_get", "kubernetes_api_resources", "kubernetes_widgets_list"} {
		if !slices.Contains(names, want) {
			t.Errorf("direct mode lacks tool %s", want)
		}
	}
	if slices.Contains(names, "execute_code") || len(names) < 100 {
		t.Errorf("direct mode serves %d tools, execute_code among them: %v", len(names), slices.Contains(names, "execute_code"))
	}

	text, isErr := call("kubernetes_pods_list", map[string]any{"namespace": "payments"})
	if isErr {
		t.Fatal(text)
	}
	header, _, _ := strings.Cut(text, "\n")
	if got := strings.Fields(header); !slices.Equal(got, []string{"NAMESPACE", "NAME", "STATUS", "RESTARTS", "NODE", "IP", "CREATED"}) {
		t.Errorf("pods table header = %v", got)
	}
	for _, c := range truth.CrashLooping {
		if c.Namespace != "payments" {
			continue
		}
		line := lineWith(text, c.Pod)
		if !strings.Contains(line, "CrashLoopBackOff") || !strings.Contains(line, fmt.Sprint(c.Restarts)) {
			t.Errorf("row of %s = %q, want CrashLoopBackOff and %d restarts", c.Pod, line, c.Restarts)
		}
	}

	text, isErr = call("kubernetes_deployments_get", map[string]any{"namespace": "shop", "name": "checkout"})
	if isErr || !strings.HasPrefix(text, "{") || !strings.Contains(text, `"name":"checkout"`) || strings.Contains(text, "managedFields") {
		t.Errorf("deployment get = %.300s (error %v), want the compact object", text, isErr)
	}

	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"kubernetes_secrets_list", map[string]any{"namespace": "payments"}},
		{"kubernetes_secrets_list", map[string]any{"allNamespaces": true}},
		{"kubernetes_secrets_get", map[string]any{"namespace": "payments", "name": "ledger-db"}},
	} {
		text, _ := call(tc.tool, tc.args)
		for _, c := range truth.Canaries {
			if strings.Contains(text, c) || strings.Contains(text, base64.StdEncoding.EncodeToString([]byte(c))) {
				t.Fatalf("%s: a secret value reached the model: %s", tc.tool, c)
			}
		}
		if tc.tool == "kubernetes_secrets_get" && !strings.Contains(text, "[redacted]") {
			t.Errorf("secret get = %.300s, want its values [redacted]", text)
		}
	}
	text, isErr = call("kubernetes_pods_get", map[string]any{"namespace": "payments"})
	if !isErr || !strings.Contains(text, "name") {
		t.Errorf("missing name: %q (error %v), want an error naming the field", text, isErr)
	}
}

// TestHybridMode serves code mode's tools and a few direct ones.
func TestHybridMode(t *testing.T) {
	names, call := toolNames(t, newBrokerMode(t, cp.Admin, broker.ModeHybrid))
	want := []string{"execute_code", "kubernetes_events_list", "kubernetes_pods_list", "kubernetes_pods_logs", "search_tools"}
	if !slices.Equal(names, want) {
		t.Errorf("hybrid tools = %v, want %v", names, want)
	}
	c := truth.CrashLooping[0]
	text, isErr := call("kubernetes_pods_logs", map[string]any{"namespace": c.Namespace, "name": c.Pod, "container": c.Container, "previous": true})
	if isErr || !strings.Contains(text, c.LastLogLine) {
		t.Errorf("logs = %q (error %v), want %q", text, isErr, c.LastLogLine)
	}
	text, isErr = call("execute_code", map[string]any{"code": "return (await tools.kubernetes.namespaces.list()).length > 0"})
	if isErr || text != "true" {
		t.Errorf("execute_code in hybrid mode = %q (error %v)", text, isErr)
	}
}

func lineWith(text, s string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
