package broker

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBlockingResultFields: in calls mode a field a catalog type lacks
// stops the script wherever it is read; the script's own types, unions and
// plain objects do not.
func TestBlockingResultFields(t *testing.T) {
	catalogType := func(name string) bool { return name == "PodStatus" || name == "Pod" }
	explain := func(string) string { return "" }
	for _, tc := range []struct {
		name  string
		code  string
		diag  diagnostic
		block bool
	}{
		{"a catalog type's missing field", "return pods.map(p => p.status?.phse)",
			diagnostic{1, 32, 2551, "Property 'phse' does not exist on type 'PodStatus'. Did you mean 'phase'?"}, true},
		{"a list read as if it had items", "return pods.items",
			diagnostic{1, 13, 2339, "Property 'items' does not exist on type 'Pod[]'."}, true},
		{"the script's own object", "const out = {}\nout.x = 1",
			diagnostic{2, 5, 2339, "Property 'x' does not exist on type '{}'."}, false},
		{"a union of catalog types", "return x.spec.replicas",
			diagnostic{1, 15, 2339, "Property 'replicas' does not exist on type 'PodSpec | DeploymentSpec'."}, false},
		{"a type the script declares under the catalog's name", "interface PodStatus { a: string }\nreturn s.b",
			diagnostic{2, 10, 2339, "Property 'b' does not exist on type 'PodStatus'."}, false},
		{"another diagnostic on a catalog type", "const n: number = p.status",
			diagnostic{1, 7, 2322, "Type 'PodStatus' is not assignable to type 'number'."}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			block, _ := blocking(TypecheckCalls, []diagnostic{tc.diag}, strings.Split(tc.code, "\n"), explain, catalogType)
			if got := len(block) == 1; got != tc.block {
				t.Errorf("blocked %v, want %v", got, tc.block)
			}
		})
	}
}

// TestTypeHint: a type short enough is shown whole, a longer one as its
// fields' names.
func TestTypeHint(t *testing.T) {
	long := "{ a: string; b?: { c: number; d: string[] }; e?: Record<string, string>; f: (\"x\" | \"y\")[]; " + strings.Repeat("g", maxTypeHint) + "?: number }"
	for _, tc := range []struct {
		name, body, want string
	}{
		{"Short", "{ a: string; b?: number }", "interface Short { a: string; b?: number }"},
		{"Long", long, "Long has the fields a, b?, e?, f, " + strings.Repeat("g", maxTypeHint) + "?"},
	} {
		if d := cmp.Diff(tc.want, typeHint(tc.name, tc.body)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

// TestBlockingMultiLineCalls: a call of tools.* written over several lines
// is stopped for a diagnostic on any of its lines (the issue's
// configmaps.create({namespace, body: {…}}) reached the bridge), and only
// for those: a line after it closes is the script's own.
func TestBlockingMultiLineCalls(t *testing.T) {
	code := `const x = { y: 1 }
await tools.kubernetes.configmaps.create({
  namespace: 'shop',
  body: { metadata: { name: "a(b" } }, // a bracket in a string ")"
})
const z: number = 'x'`
	explain := func(string) string { return "" }
	for _, tc := range []struct {
		name  string
		diag  diagnostic
		block bool
	}{
		{"an unknown field inside the call", diagnostic{4, 3, 2353, "Object literal may only specify known properties, and 'body' does not exist in type '{ namespace?: string; object: ConfigMap; }'."}, true},
		{"a missing field, on the call's line", diagnostic{2, 42, 2345, "Argument of type '{ namespace: string; body: ... }' is not assignable to parameter of type '{ object: ConfigMap; }'."}, true},
		{"after the call closed", diagnostic{6, 7, 2322, "Type 'string' is not assignable to type 'number'."}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			block, _ := blocking(TypecheckCalls, []diagnostic{tc.diag}, strings.Split(code, "\n"), explain, func(string) bool { return false })
			if got := len(block) == 1; got != tc.block {
				t.Errorf("blocked %v, want %v", got, tc.block)
			}
		})
	}
	if diff := cmp.Diff([]callSpan{{first: 2, last: 5, chain: ".kubernetes.configmaps.create"}}, callSpans(strings.Split(code, "\n")), cmp.AllowUnexported(callSpan{})); diff != "" {
		t.Errorf("callSpans (-want +got):\n%s", diff)
	}
}
