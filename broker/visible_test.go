package broker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/catalog"
)

// TestVisible: what a person cannot see is shown as an escape; ordinary
// text, accents and emoji are left alone.
func TestVisible(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		escaped        bool
	}{
		{"plain", `metadata.annotations.team: (none) → "web"`, `metadata.annotations.team: (none) → "web"`, false},
		{"accents and emoji", "café 🚀 naïve", "café 🚀 naïve", false},
		{"right-to-left override", "team-\u202Enimda-retsulc\u202C", `team-\u202Enimda-retsulc\u202C`, true},
		{"isolates in args", "[\"--safe\u202E--\", \"\u2066rm -rf /\u2069\"]", `["--safe\u202E--", "\u2066rm -rf /\u2069"]`, true},
		{"zero-width space and joiner", "adm\u200Bin\u200D", `adm\u200Bin\u200D`, true},
		{"byte order mark", "\uFEFFx", `\uFEFFx`, true},
		{"no-break space", "a\u00A0b", `a\u00A0b`, true},
		{"tag characters", "ok\U000E0041", `ok\U000E0041`, true},
		// Escaped, so that it cannot fake the next line, but an ordinary
		// value of several lines raises no warning.
		{"a line break that would fake the next line", "1\n2. kubernetes.configmaps.patch", `1\n2. kubernetes.configmaps.patch`, false},
		{"a config file's lines and a tab", "server {\r\n\tlisten 80;\n}", `server {\r\n\tlisten 80;\n}`, false},
		{"a line break beside a bidi control", "a\n\u202Eb", `a\n\u202Eb`, true},
		{"escape and bell", "a\x1b[31mb\x07", `a\u001B[31mb\u0007`, true},
		{"invalid UTF-8", "a\xffb", `a\xffb`, true},
		{"variation selector", "x\uFE0F", `x\uFE0F`, true},
		{"combining grapheme joiner and Khmer vowels inherent", "a\u034Fb\u17B4", `a\u034Fb\u17B4`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, escaped := visible(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" || escaped != tc.escaped {
				t.Errorf("visible(%q) = %q, %v (-want +got):\n%s", tc.in, got, escaped, diff)
			}
		})
	}
}

// TestPlanTextShowsInvisibleCharacters: the red-team's annotation reads as
// what it is in the plan text every channel shows (tool result,
// elicitation, page, CLI), and its line is flagged.
func TestPlanTextShowsInvisibleCharacters(t *testing.T) {
	text := PlanText(&bridge.Plan{ID: "p1", Changes: []bridge.PlanChange{
		{Op: "kubernetes.namespaces.patch", Object: "Namespace shop", Diff: []string{"metadata.annotations.owner: (none) → \"team-\u202Enimda-retsulc\u202C\""}},
		{Op: "kubernetes.deployments.patch", Object: "Deployment shop/web", Diff: []string{"spec.template.spec.containers[web].args: [\"--safe\u202E--\", \"\u2066rm -rf /\u2069\"]"}},
		{Op: "kubernetes.deployments.scale", Object: "Deployment shop/api", Diff: []string{"spec.replicas: 2 → 3"}},
	}})
	if strings.ContainsAny(text, "\u202E\u202C\u2066\u2069") {
		t.Errorf("the plan text holds raw bidi controls:\n%s", text)
	}
	for _, want := range []string{
		"1. " + invisibleWarning + `kubernetes.namespaces.patch Namespace shop: metadata.annotations.owner: (none) → "team-\u202Enimda-retsulc\u202C"`,
		"2. " + invisibleWarning + `kubernetes.deployments.patch Deployment shop/web: spec.template.spec.containers[web].args: ["--safe\u202E--", "\u2066rm -rf /\u2069"]`,
		"3. kubernetes.deployments.scale Deployment shop/api: spec.replicas: 2 → 3",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan text lacks %q:\n%s", want, text)
		}
	}
	// The structured plan carries the same lines, escaped the same way.
	raw, _ := json.Marshal(visibleChanges([]bridge.PlanChange{{Op: "kubernetes.namespaces.patch", Object: "Namespace sh\u202Eop", Diff: []string{"owner: \"team-\u202Enimda\""}}}))
	if strings.Contains(string(raw), "\u202E") || strings.Contains(string(raw), "\u202e") || !strings.Contains(string(raw), `team-\\u202Enimda`) {
		t.Errorf("the structured plan: %s", raw)
	}
	if got := visibleLines("{\n  \"owner\": \"team-\u202Enimda\"\n}"); got != "{\n  \"owner\": \"team-\\u202Enimda\"\n}" {
		t.Errorf("the page's full call: %q", got)
	}
}

// TestPageCardsShowInvisibleCharacters: on the approval page a change
// whose field holds a bidi control reads with the control escaped and a
// warning first, in its card and its before → after table.
func TestPageCardsShowInvisibleCharacters(t *testing.T) {
	pg := &approvalPage{}
	p := &bridge.Pending{ID: "plan-1", Expires: time.Now().Add(time.Hour), Calls: []bridge.PlanCall{
		{Op: "kubernetes.namespaces.patch", Object: "Namespace shop", Review: bridge.Review{Change: 1, Tables: []bridge.FieldTable{{Object: "Namespace shop", Verb: "change",
			Fields: []catalog.Field{{Path: "metadata.annotations.owner", Before: "(none)", After: "\"team-\u202Enimda-retsulc\u202C\""}}}}}},
		{Op: "kubernetes.deployments.scale", Object: "Deployment shop/api", Review: bridge.Review{Change: 1}},
	}}
	var out strings.Builder
	if err := pageTemplate.Execute(&out, map[string]any{"Title": "Plan", "Plan": pg.view(p)}); err != nil {
		t.Fatal(err)
	}
	html := out.String()
	if strings.ContainsAny(html, "\u202E\u202C") || !strings.Contains(html, `team-\u202Enimda-retsulc\u202C`) {
		t.Errorf("the card holds raw bidi controls or not their escapes")
	}
	if n := strings.Count(html, "⚠ invisible or reordering characters"); n != 1 {
		t.Errorf("%d warnings, want 1 (the first change's card only)", n)
	}
}
