package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/internal/controlplane"
	"github.com/kubecode/kubecode/internal/scenario"
)

var (
	cp    *controlplane.ControlPlane
	truth *scenario.Truth
)

func TestMain(m *testing.M) { os.Exit(scenario.Main(&cp, &truth, m.Run)) }

func newAdapter(t testing.TB, opts *Options) *Adapter {
	t.Helper()
	a, err := New(cp.Admin, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a
}

func call(t *testing.T, a *Adapter, name, args string, v any) {
	t.Helper()
	out, err := a.Call(context.Background(), name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): %v", name, args, err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func TestDiscover(t *testing.T) {
	a, err := New(cp.Admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	ops, version, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*catalog.Operation{}
	for _, op := range ops {
		byName[op.Name] = op
	}
	for _, want := range []string{
		"kubernetes.pods.list", "kubernetes.pods.get", "kubernetes.pods.logs", "kubernetes.events.list",
		"kubernetes.events_events_k8s_io.list", "kubernetes.deployments.get", "kubernetes.endpointslices.list",
		"kubernetes.customresourcedefinitions.list", "kubernetes.api_resources", "kubernetes." + truth.CRD.Resource + ".list",
	} {
		if byName[want] == nil {
			t.Errorf("operation %s missing", want)
		}
	}
	pods := byName["kubernetes.pods.list"]
	if d := cmp.Diff([]string{"kubernetes.po.list", "kubernetes.pod.list"}, sorted(pods.Aliases)); d != "" {
		t.Errorf("pods.list aliases (-want +got):\n%s", d)
	}
	// The response shape comes from OpenAPI: deep fields an agent needs exist.
	item := pods.Output.Items
	cs := item.Properties["status"].Properties["containerStatuses"].Items
	if cs.Properties["restartCount"].Type != "integer" || cs.Properties["state"].Properties["waiting"].Properties["reason"].Type != "string" {
		t.Errorf("pod schema lacks status.containerStatuses[].restartCount/state.waiting.reason")
	}
	if byName["kubernetes."+truth.CRD.Resource+".list"].Output.Items.Properties["spec"] == nil {
		t.Error("the CRD's list output has no spec from its OpenAPI schema")
	}
	_, again, err := a.Discover(context.Background())
	if err != nil || again != version {
		t.Errorf("unchanged discovery changed version: %s → %s (%v)", version, again, err)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestList(t *testing.T) {
	a := newAdapter(t, &Options{PageSize: 7}) // small pages exercise continue tokens
	ns := truth.Namespaces[0]
	var all []map[string]any
	call(t, a, "kubernetes.pods.list", `{"allNamespaces":true}`, &all)
	if want := truth.Pods + truth.Live.Pods; len(all) != want {
		t.Errorf("all namespaces: %d pods, want %d seeded and %d live", len(all), truth.Pods, truth.Live.Pods)
	}
	if all[0]["kind"] != "Pod" || all[0]["apiVersion"] != "v1" {
		t.Errorf("items lack kind/apiVersion: %v %v", all[0]["kind"], all[0]["apiVersion"])
	}
	var some []map[string]any
	call(t, a, "kubernetes.pods.list", `{"allNamespaces":true,"limit":10}`, &some)
	if len(some) != 10 {
		t.Errorf("limit 10 returned %d", len(some))
	}
	var inNS []map[string]any
	call(t, a, "kubernetes.pods.list", `{"namespace":"`+ns+`"}`, &inNS)
	for _, p := range inNS {
		if p["metadata"].(map[string]any)["namespace"] != ns {
			t.Fatalf("pod from another namespace in %s", ns)
		}
	}
	var pending []map[string]any
	call(t, a, "kubernetes.pods.list", `{"allNamespaces":true,"fieldSelector":"status.phase=Pending"}`, &pending)
	if len(pending) == 0 {
		t.Error("field selector status.phase=Pending found nothing; the scenario seeds a pending pod")
	}
	var none []map[string]any
	call(t, a, "kubernetes.pods.list", `{"allNamespaces":true,"labelSelector":"no-such-label=x"}`, &none)
	if none == nil || len(none) != 0 {
		t.Errorf("empty list must be [], got %v", none)
	}
}

// TestPage: a list read page by page, continue to continue, gives the
// items list gives, in its order, for typed resources and for custom ones
// (listed as JSON); a page past its bound is refused with the bound.
func TestPage(t *testing.T) {
	a := newAdapter(t, nil)
	for _, res := range []string{"pods", "configmaps", "widgets"} {
		t.Run(res, func(t *testing.T) {
			var all []map[string]any
			call(t, a, "kubernetes."+res+".list", `{"allNamespaces":true}`, &all)
			var paged []map[string]any
			next, pages := "", 0
			for {
				var page struct {
					Items     []map[string]any `json:"items"`
					Continue  string           `json:"continue"`
					Remaining *int64           `json:"remainingItemCount"`
				}
				args, _ := json.Marshal(map[string]any{"allNamespaces": true, "limit": 3, "continue": next})
				call(t, a, "kubernetes."+res+".page", string(args), &page)
				if page.Items == nil || len(page.Items) > 3 {
					t.Fatalf("page %d holds %d items", pages, len(page.Items))
				}
				paged = append(paged, page.Items...)
				pages++
				if page.Continue == "" {
					break
				}
				if page.Remaining == nil || *page.Remaining <= 0 {
					t.Errorf("page %d: continue without remainingItemCount", pages)
				}
				next = page.Continue
			}
			name := func(o map[string]any) string {
				m := o["metadata"].(map[string]any)
				return fmt.Sprint(m["namespace"], "/", m["name"], " ", o["kind"])
			}
			var want, got []string
			for _, o := range all {
				want = append(want, name(o))
			}
			for _, o := range paged {
				got = append(got, name(o))
			}
			if diff := cmp.Diff(want, got); diff != "" || pages < (len(all)+2)/3 {
				t.Errorf("%d pages (-list +pages):\n%s", pages, diff)
			}
		})
	}
	if _, err := a.Call(context.Background(), "kubernetes.pods.page", json.RawMessage(`{"limit":5001}`)); err == nil || !strings.Contains(err.Error(), "at most 5000") {
		t.Errorf("a page of 5001: %v", err)
	}
}

// TestListInParts checks a list sent page by page (as to a worker) holds
// the same items, in the same order, as the list made whole, and that only
// lists are sent in parts.
func TestListInParts(t *testing.T) {
	a := newAdapter(t, &Options{PageSize: 3})
	for _, res := range []string{"pods", "configmaps", "widgets"} {
		t.Run(res, func(t *testing.T) {
			name := "kubernetes." + res + ".list"
			for _, args := range []string{`{"allNamespaces":true}`, `{"allNamespaces":true,"limit":4}`, `{"namespace":"no-such-namespace"}`} {
				whole, err := a.Call(context.Background(), name, json.RawMessage(args))
				if err != nil {
					t.Fatal(err)
				}
				var parts []json.RawMessage
				sent, err := a.CallParts(context.Background(), name, json.RawMessage(args), func(part json.RawMessage) error {
					parts = append(parts, bytes.Clone(part))
					return nil
				})
				if err != nil || !sent {
					t.Fatalf("%s: sent %v, %v", args, sent, err)
				}
				var want, got []any
				if err := json.Unmarshal(whole, &want); err != nil {
					t.Fatal(err)
				}
				for _, part := range parts {
					var items []any
					if err := json.Unmarshal(part, &items); err != nil {
						t.Fatalf("part %s: %v", part, err)
					}
					if len(items) > 3 {
						t.Errorf("a part of %d items from pages of 3", len(items))
					}
					got = append(got, items...)
				}
				if len(parts) == 0 || len(want) > 3 && len(parts) < 2 {
					t.Errorf("%s: %d items in %d parts", args, len(want), len(parts))
				}
				if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s (-whole +parts):\n%s", args, diff)
				}
			}
		})
	}
	stop := errors.New("no more")
	if _, err := a.CallParts(context.Background(), "kubernetes.pods.list", json.RawMessage(`{"allNamespaces":true}`), func(json.RawMessage) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("a part refused: %v", err)
	}
	if sent, err := a.CallParts(context.Background(), "kubernetes.pods.get", json.RawMessage(`{"name":"x"}`), nil); sent || err != nil {
		t.Errorf("a get sent in parts: %v %v", sent, err)
	}
}

func TestGetNotFound(t *testing.T) {
	a := newAdapter(t, nil)
	_, err := a.Call(context.Background(), "kubernetes.pods.get", json.RawMessage(`{"name":"nope","namespace":"default"}`))
	var ae *catalog.CallError
	if !errors.As(err, &ae) || ae.Status != 404 || ae.Reason != "NotFound" {
		t.Fatalf("want a 404 NotFound CallError, got %v", err)
	}
	if _, err := a.Call(context.Background(), "kubernetes.nothing.list", nil); !errors.Is(err, errUnknownOperation) {
		t.Fatalf("unknown operation: %v", err)
	}
}

func TestLogsThroughTheAPIServer(t *testing.T) {
	a := newAdapter(t, nil)
	c := truth.CrashLooping[0]
	var prev string
	call(t, a, "kubernetes.pods.logs", `{"name":"`+c.Pod+`","namespace":"`+c.Namespace+`","container":"`+c.Container+`","previous":true,"tailLines":1}`, &prev)
	if strings.TrimSpace(prev) != c.LastLogLine {
		t.Errorf("previous logs tail 1 = %q, want %q", prev, c.LastLogLine)
	}
}

func TestEventsForAnObject(t *testing.T) {
	a := newAdapter(t, nil)
	c := truth.CrashLooping[0]
	var evs []map[string]any
	call(t, a, "kubernetes.events.list", `{"namespace":"`+c.Namespace+`","involvedObject":{"kind":"Pod","name":"`+c.Pod+`"}}`, &evs)
	if len(evs) == 0 {
		t.Fatalf("no events about %s/%s", c.Namespace, c.Pod)
	}
	for _, e := range evs {
		if e["involvedObject"].(map[string]any)["name"] != c.Pod {
			t.Errorf("event about another object: %v", e["involvedObject"])
		}
	}
}

func TestAPIResources(t *testing.T) {
	a := newAdapter(t, nil)
	var apps []struct {
		Resource   string
		Operations []string
	}
	call(t, a, "kubernetes.api_resources", `{"group":"apps"}`, &apps)
	var names []string
	for _, r := range apps {
		names = append(names, r.Resource)
	}
	if d := cmp.Diff([]string{"controllerrevisions", "daemonsets", "deployments", "replicasets", "statefulsets"}, names); d != "" {
		t.Errorf("apps resources (-want +got):\n%s", d)
	}
}

func BenchmarkListPods(b *testing.B) {
	a := newAdapter(b, nil)
	for b.Loop() {
		if _, err := a.Call(context.Background(), "kubernetes.pods.list", json.RawMessage(`{"allNamespaces":true}`)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiscoverUnchanged(b *testing.B) {
	a := newAdapter(b, nil)
	for b.Loop() {
		if _, _, err := a.Discover(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
