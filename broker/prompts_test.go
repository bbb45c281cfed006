package broker_test

import (
	"context"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/adapters/helm"
	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/examples"
	"github.com/kubecode/kubecode/internal/helmdemo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var scriptBlock = regexp.MustCompile("(?s)```ts\n(.*)\n```")

// TestPrompts: every prompt, through a real MCP client, hands the agent a
// script (not data) that execute_code runs on the living cluster, and the
// script's answer is checked against what the cluster was seeded with.
// Arguments stay strings whatever they hold; a missing required one is
// an error.
func TestPrompts(t *testing.T) {
	seedHelmDemo(t)
	var ps []*broker.Prompt
	for _, s := range examples.Prompts() {
		p, err := broker.NewPrompt(s.Name, s.Title, s.Script, s.Required...)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	a, err := kubernetes.New(cp.Admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := helm.New(cp.Admin, &helm.Options{ChartSources: []string{exampleCharts}})
	if err != nil {
		t.Fatal(err)
	}
	br := bridge.New([]bridge.Provider{a, h}, nil)
	t.Cleanup(func() { _ = br.Close() })
	// Strict: the scripts people get type-check whole.
	b := broker.New(br, &broker.Options{Logger: slog.New(slog.DiscardHandler), Prompts: ps, Tsgo: tsgo(t), Typecheck: broker.TypecheckStrict})
	cs := connect(t, b)
	ctx := context.Background()
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Prompts {
		names = append(names, p.Name)
		if p.Description == "" || p.Title == "" {
			t.Errorf("prompt %s has no description or title", p.Name)
		}
	}
	if d := cmp.Diff([]string{"cluster-health", "helm-drift", "pod-not-ready", "restarts", "services-without-endpoints"}, sorted(names)); d != "" {
		t.Errorf("prompts (-want +got):\n%s", d)
	}
	// run gets a prompt and runs its script as an agent would.
	run := func(name string, args map[string]string, out any) string {
		t.Helper()
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("prompt %s: %v", name, err)
		}
		text := res.Messages[0].Content.(*mcp.TextContent).Text
		m := scriptBlock.FindStringSubmatch(text)
		if m == nil || !strings.Contains(text, "execute_code") {
			t.Fatalf("prompt %s hands no script:\n%s", name, text)
		}
		execJSON(t, cs, m[1], out)
		return m[1]
	}

	var restarts []struct {
		Namespace, Name string
		Restarts        int32
	}
	run("restarts", nil, &restarts)
	var gotRestarted []string
	for _, r := range restarts {
		gotRestarted = append(gotRestarted, r.Namespace+"/"+r.Name)
	}
	var wantRestarted []string
	for _, r := range truth.Restarted {
		wantRestarted = append(wantRestarted, r.Namespace+"/"+r.Name)
	}
	if d := cmp.Diff(sorted(wantRestarted), sorted(gotRestarted)); d != "" || len(wantRestarted) == 0 {
		t.Errorf("restarts (-seeded +prompt):\n%s", d)
	}

	var services []string
	run("services-without-endpoints", map[string]string{"namespace": ""}, &services)
	var wantServices []string
	for _, r := range truth.ServicesWithoutEndpoints {
		wantServices = append(wantServices, r.Namespace+"/"+r.Name)
	}
	if d := cmp.Diff(sorted(wantServices), services); d != "" {
		t.Errorf("services without endpoints (-seeded +prompt):\n%s", d)
	}

	crash := truth.CrashLooping[0]
	var health struct {
		Pods     int
		Crashing []string
		NotReady []string
	}
	run("cluster-health", map[string]string{"namespace": crash.Namespace}, &health)
	if health.Pods == 0 || !slices.ContainsFunc(health.Crashing, func(s string) bool {
		return strings.HasPrefix(s, crash.Namespace+"/"+crash.Pod+" "+crash.Container+":") && strings.HasSuffix(s, crash.LastLogLine)
	}) {
		t.Errorf("cluster health of %s lacks %s/%s (%q): %+v", crash.Namespace, crash.Pod, crash.Container, crash.LastLogLine, health)
	}

	var notReady struct {
		Pod        string
		Containers []struct {
			Name  string
			Ready bool
			State string
			Logs  []string
		}
	}
	run("pod-not-ready", map[string]string{"namespace": crash.Namespace, "pod": crash.Pod}, &notReady)
	if len(notReady.Containers) == 0 || !slices.ContainsFunc(notReady.Containers, func(c struct {
		Name  string
		Ready bool
		State string
		Logs  []string
	}) bool {
		return c.Name == crash.Container && !c.Ready && slices.Contains(c.Logs, crash.LastLogLine)
	}) {
		t.Errorf("why %s/%s is not ready: %+v", crash.Namespace, crash.Pod, notReady)
	}

	var drift struct {
		Summary string
		Rows    []string
	}
	run("helm-drift", map[string]string{"release": "web", "namespace": "helm-demo"}, &drift)
	if len(drift.Rows) != len(helmdemo.Edits) || !strings.Contains(drift.Summary, "objects of web") {
		t.Errorf("helm drift: %+v, want %d rows", drift, len(helmdemo.Edits))
	}

	// A value is a string, whatever it holds: no code gets in (the API
	// server reads it as a namespace's name and refuses it).
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "restarts", Arguments: map[string]string{"namespace": `x' }; throw new Error('injected'); //`}})
	if err != nil {
		t.Fatal(err)
	}
	script := scriptBlock.FindStringSubmatch(res.Messages[0].Content.(*mcp.TextContent).Text)[1]
	text, isErr, _ := execute(t, cs, map[string]any{"code": script})
	if !strings.HasPrefix(script, `const args = {"namespace":"x' }; throw new Error('injected'); //"}`) || !isErr ||
		!strings.Contains(text, `invalid namespace "x' }; throw new Error('injected'); //"`) || strings.Contains(text, "Error: injected") {
		t.Errorf("an argument made code:\n%s\n%s", script, text)
	}
	for _, tc := range []struct {
		name string
		args map[string]string
		want string
	}{
		{"helm-drift", nil, "needs the argument release"},
		{"restarts", map[string]string{"nope": "x"}, "has no argument nope"},
	} {
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: tc.name, Arguments: tc.args}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("prompt %s %v: %v, want %q", tc.name, tc.args, err, tc.want)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}
