package helm_test

import (
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/adapters/helm"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/catalog"
)

// TestSecretsNeverLeave installs a chart whose Secret, values and notes
// hold a password, and reads the release every way: no result holds the
// password, plain or base64-encoded, while the Secret's keys stay visible.
func TestSecretsNeverLeave(t *testing.T) {
	const password = "s3cr3t-Pa55word" // testdata/charts/kinds/values.yaml
	a := newAdapter(t)
	ns := cp.Namespace(t)
	target := map[string]any{"release": "db", "namespace": ns}
	with := func(more map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range target {
			out[k] = v
		}
		for k, v := range more {
			out[k] = v
		}
		return out
	}
	install(t, a, ns, "db", "kinds", nil)
	patch(t, "secrets", ns, "db-db", "kubectl-edit", "application/merge-patch+json", `{"stringData":{"password":"another-Pa55word"}}`)
	for _, c := range []struct {
		op   string
		args map[string]any
	}{
		{"helm.get_manifest", with(map[string]any{"hooks": true})},
		{"helm.get_notes", target},
		{"helm.get_values", with(map[string]any{"all": true})},
		{"helm.status", target},
		{"helm.history", target},
		{"helm.drift", target},
		{"helm.template", map[string]any{"chart": chart("kinds")}},
		{"helm.upgrade", with(map[string]any{"chart": chart("kinds"), "wait": false})},
	} {
		t.Run(c.op, func(t *testing.T) {
			raw, _ := json.Marshal(c.args)
			var out json.RawMessage
			var err error
			if c.op == "helm.upgrade" {
				_, out, err = a.Preview(context.Background(), c.op, raw)
			} else {
				out, err = a.Call(context.Background(), c.op, raw)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{password, base64.StdEncoding.EncodeToString([]byte(password)), "another-Pa55word"} {
				if strings.Contains(string(out), s) {
					t.Errorf("%s returned a secret value:\n%s", c.op, out)
				}
			}
			// What each answer shows in the secret's place.
			shows := map[string]string{
				"helm.get_manifest": `"password":"[redacted]"`, "helm.get_values": `"password":"[redacted]"`,
				"helm.get_notes": "Connect with password [redacted] to db-db", "helm.template": `"password":"[redacted]"`,
				"helm.drift": `{"object":"Secret/db-db","path":"data.password","change":"changed","expected":"[redacted]","actual":"[redacted]"`,
			}[c.op]
			if !strings.Contains(string(out), shows) {
				t.Errorf("%s does not show %s:\n%s", c.op, shows, out)
			}
		})
	}
}

// TestComposedSecretValuesNeverLeave: a chart that builds a Secret from a
// value under an innocent key (postgres://app:{{ .Values.db.code }}@db)
// makes that value a secret: no answer holds it, encoded, whole or in part
// (the notes print a truncated connection string and the value's start).
func TestComposedSecretValuesNeverLeave(t *testing.T) {
	const canary = "kc9Canary7Hq2xZ"
	a := newAdapter(t)
	ns := cp.Namespace(t)
	values := map[string]any{"db": map[string]any{"code": canary}}
	target := map[string]any{"release": "app", "namespace": ns}
	with := func(more map[string]any) map[string]any {
		out := map[string]any{}
		for _, m := range []map[string]any{target, more} {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	tricky := chart("tricky")
	install(t, a, ns, "app", "tricky", values)
	leaked := func(text string) string {
		if strings.Contains(text, base64.StdEncoding.EncodeToString([]byte(canary))) {
			return "base64"
		}
		for i := 0; i+6 <= len(canary); i++ {
			if strings.Contains(text, canary[i:i+6]) {
				return canary[i : i+6]
			}
		}
		return ""
	}
	for _, c := range []struct {
		op   string
		args map[string]any
	}{
		{"helm.get_values", target},
		{"helm.get_values", with(map[string]any{"all": true})},
		{"helm.get_values", with(map[string]any{"all": true, "revision": 1})},
		{"helm.get_notes", target},
		{"helm.get_manifest", with(map[string]any{"hooks": true})},
		{"helm.status", target},
		{"helm.history", target},
		{"helm.list", map[string]any{"namespace": ns}},
		{"helm.drift", target},
		{"helm.template", map[string]any{"chart": tricky, "values": values}},
		{"helm.upgrade", with(map[string]any{"chart": tricky, "values": values, "wait": false})},
		{"helm.upgrade", with(map[string]any{"chart": tricky, "reuseValues": true, "wait": false})},
		{"helm.install", map[string]any{"release": "app", "namespace": cp.Namespace(t), "chart": tricky, "values": values}},
	} {
		raw, _ := json.Marshal(c.args)
		t.Run(c.op+string(raw), func(t *testing.T) {
			var out json.RawMessage
			var err error
			if c.op == "helm.upgrade" || c.op == "helm.install" {
				var change any
				change, out, err = a.Preview(context.Background(), c.op, raw)
				cb, _ := json.Marshal(change)
				if part := leaked(string(cb)); part != "" {
					t.Errorf("the change holds %q: %s", part, cb)
				}
			} else {
				out, err = a.Call(context.Background(), c.op, raw)
			}
			if err != nil {
				t.Fatal(err)
			}
			if part := leaked(string(out)); part != "" {
				t.Errorf("%s returned %q:\n%s", c.op, part, out)
			}
		})
	}
	// What shows in the value's place: the chart's own text stays, but for
	// the few characters a piece straddling the value's start hides.
	var notes string
	call(t, a, "helm.get_notes", target, &notes)
	if !strings.Contains(notes, "connect with postgres://app:[redacted, or ask for pass [redact") {
		t.Errorf("notes %q", notes)
	}
	var vals map[string]any
	call(t, a, "helm.get_values", target, &vals)
	// A value under an innocent key, known secret because a Secret holds
	// it, is hidden by the registry every result passes.
	want := "[hidden: Helm release " + ns + "/app secret value]"
	if diff := cmp.Diff(map[string]any{"db": map[string]any{"code": want}}, vals); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	// An error quoting the value loses it too.
	raw, _ := json.Marshal(with(map[string]any{"chart": tricky, "values": map[string]any{"db": values["db"], "failDSN": true}}))
	_, _, err := a.Preview(context.Background(), "helm.upgrade", raw)
	if err == nil || leaked(err.Error()) != "" || !strings.Contains(err.Error(), "cannot reach postgres://app:[redacted]") {
		t.Errorf("an upgrade failing with the value in its message: %v", err)
	}
}

// TestChartSources: charts load from allowed directories only, however
// the path is spelled; symbolic links are followed before judging, and a
// directory whose name merely begins like an allowed one is not allowed.
func TestChartSources(t *testing.T) {
	root := t.TempDir()
	allowed := filepath.Join(root, "charts")
	outside := filepath.Join(root, "charts-evil")
	for _, d := range []string{allowed, outside} {
		if err := os.CopyFS(filepath.Join(d, "web-app"), os.DirFS(filepath.Join(exampleCharts, "web-app"))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "web-app"), filepath.Join(allowed, "link")); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(allowed, "inner")
	if err := os.CopyFS(inner, os.DirFS(filepath.Join(exampleCharts, "web-app"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(inner, "templates", "stolen.yaml")); err != nil {
		t.Fatal(err)
	}
	a, err := helm.New(cp.Admin, &helm.Options{ChartSources: []string{allowed, "oci://registry.example/charts", "stable"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		chart string
		want  string // an error's beginning; empty means it renders
	}{
		{filepath.Join(allowed, "web-app"), ""},
		{filepath.Join(allowed, "sub", "..", "web-app"), ""},
		{filepath.Join(outside, "web-app"), "chart %q is not from an allowed chart source"},
		{filepath.Join(allowed, "..", "charts-evil", "web-app"), "chart %q is not from an allowed chart source"},
		{filepath.Join(allowed, "link"), "chart %q is not from an allowed chart source"},
		{filepath.Join(allowed, "missing"), "chart %q: no such file or directory"},
		{inner, "chart %q: holds a symbolic link (templates/stolen.yaml)"},
		{"oci://elsewhere.example/charts/web-app", "chart %q is not from an allowed chart source"},
		{"oci://registry.example/charts-other/web-app", "chart %q is not from an allowed chart source"},
		{"bitnami/nginx", "chart %q is not from an allowed chart source"},
		{"", "name the chart"},
	} {
		t.Run(tc.chart, func(t *testing.T) {
			raw, _ := json.Marshal(map[string]any{"chart": tc.chart})
			_, err := a.Call(context.Background(), "helm.template", raw)
			want := strings.Replace(tc.want, "%q", `"`+tc.chart+`"`, 1)
			switch {
			case want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case want != "" && (err == nil || !strings.HasPrefix(err.Error(), want)):
				t.Errorf("error %v, want one beginning %q", err, want)
			}
		})
	}
}

// TestTransformedSecretValuesNeverLeave: the red-team's finding as
// written — a chart whose NOTES print a value that flows into a Secret as
// b32enc, printf "%x", characters joined by spaces and 5-character chunks
// handed all four back on a plain helm.get_notes, a plan-mode upgrade with
// reuseValues returned the stored value the agent never supplied, and a
// fail message with b32enc carried it in the error. Texts the agent reads
// are now rendered from values in which the secret is a marker, so no
// encoding of it is there to find.
func TestTransformedSecretValuesNeverLeave(t *testing.T) {
	const canary = "kc9Canary7Hq2xZ"
	var chunks []string
	for i := 0; i < len(canary); i += 5 {
		chunks = append(chunks, canary[i:min(i+5, len(canary))])
	}
	forms := map[string]string{
		"plain":  canary,
		"base64": base64.StdEncoding.EncodeToString([]byte(canary)),
		"b32enc": strings.TrimRight(base32.StdEncoding.EncodeToString([]byte(canary)), "="),
		"hex":    hex.EncodeToString([]byte(canary)),
		"spaced": strings.Join(strings.Split(canary, ""), " "),
		"chunks": strings.Join(chunks, " "),
	}
	leaked := func(text string) string {
		for name, f := range forms {
			if strings.Contains(text, f) || strings.Contains(strings.ToLower(text), strings.ToLower(f)) {
				return name
			}
		}
		return ""
	}
	a := newAdapter(t)
	ns := cp.Namespace(t)
	tricky := chart("tricky")
	target := map[string]any{"release": "app", "namespace": ns}
	install(t, a, ns, "app", "tricky", map[string]any{"db": map[string]any{"code": canary}, "leak": true})

	t.Run("get_notes", func(t *testing.T) {
		var notes string
		call(t, a, "helm.get_notes", target, &notes)
		if f := leaked(notes); f != "" {
			t.Errorf("helm.get_notes holds the value (%s):\n%s", f, notes)
		}
		if !strings.Contains(notes, "b32 "+base32.StdEncoding.EncodeToString([]byte("[redacted]"))) {
			t.Errorf("the notes were not rendered from the marker:\n%s", notes)
		}
	})
	// upgrade previews an upgrade of the release with values (reusing the
	// stored ones when reuse), checks that neither its result nor its
	// change holds the value, and returns them; or its error.
	upgrade := func(t *testing.T, values map[string]any, reuse bool) (*catalog.Change, string, error) {
		t.Helper()
		raw, _ := json.Marshal(map[string]any{"release": "app", "namespace": ns, "chart": tricky, "reuseValues": reuse, "values": values, "wait": false})
		change, out, err := a.Preview(context.Background(), "helm.upgrade", raw)
		if err != nil {
			if f := leaked(err.Error()); f != "" {
				t.Errorf("the error holds the value (%s): %v", f, err)
			}
			return nil, "", err
		}
		cb, _ := json.Marshal(change)
		if f := leaked(string(out) + string(cb)); f != "" {
			t.Errorf("the preview holds the value (%s):\n%s\n%s", f, out, cb)
		}
		return change, string(out), nil
	}
	t.Run("a plan-mode upgrade reusing the stored values", func(t *testing.T) {
		if _, out, err := upgrade(t, map[string]any{"leak": true}, true); err != nil || !strings.Contains(out, "b32 ") {
			t.Errorf("no notes in the preview (%v): %s", err, out)
		}
	})
	t.Run("a plan line of a ConfigMap holding the value transformed", func(t *testing.T) {
		change, _, err := upgrade(t, map[string]any{"db": map[string]any{"code": "kc4Rotated8Lm3wQ"}, "leak": true, "color": "green"}, false)
		if err != nil {
			t.Fatal(err)
		}
		diff := strings.Join(change.Diff, "\n")
		if !strings.Contains(diff, "data.b32: changed (value not shown)") || !strings.Contains(diff, `data.color: "blue" → "green"`) {
			t.Errorf("the ConfigMap's line:\n%s", diff)
		}
	})
	// Texts no masked render makes: an object's name in a plan line, an
	// error from Helm's own checks quoting it.
	t.Run("an object named after the value", func(t *testing.T) {
		if _, _, err := upgrade(t, map[string]any{"leakName": true}, true); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("an error of Helm's own naming the object", func(t *testing.T) {
		if _, _, err := upgrade(t, map[string]any{"badKind": true}, true); err == nil || !strings.Contains(err.Error(), "NoSuchKind") {
			t.Errorf("the error: %v", err)
		}
	})
	t.Run("a fail message with b32enc", func(t *testing.T) {
		if _, _, err := upgrade(t, map[string]any{"failEncoded": true}, true); err == nil || !strings.Contains(err.Error(), "cannot reach "+base32.StdEncoding.EncodeToString([]byte("[redacted]"))) {
			t.Errorf("the error: %v", err)
		}
	})
	// A rollback back to the value: its plan diffs the cluster against the
	// stored revision, which holds the value transformed.
	t.Run("a rollback to the revision holding the value", func(t *testing.T) {
		call(t, a, "helm.upgrade", map[string]any{"release": "app", "namespace": ns, "chart": tricky, "wait": false,
			"values": map[string]any{"db": map[string]any{"code": "kc4Rotated8Lm3wQ"}, "leak": true}}, nil)
		raw, _ := json.Marshal(map[string]any{"release": "app", "namespace": ns, "revision": 1, "wait": false})
		change, out, err := a.Preview(context.Background(), "helm.rollback", raw)
		if err != nil {
			t.Fatal(err)
		}
		cb, _ := json.Marshal(change)
		if f := leaked(string(out) + string(cb)); f != "" {
			t.Errorf("the rollback's preview holds the value (%s):\n%s\n%s", f, out, cb)
		}
		if !strings.Contains(strings.Join(change.Diff, "\n"), "data.b32: changed (value not shown)") {
			t.Errorf("the rollback's ConfigMap line:\n%s", strings.Join(change.Diff, "\n"))
		}
	})
	t.Run("helm.template", func(t *testing.T) {
		raw, _ := json.Marshal(map[string]any{"chart": tricky, "values": map[string]any{"db": map[string]any{"code": canary}, "leak": true}})
		out, err := a.Call(context.Background(), "helm.template", raw)
		if err != nil {
			t.Fatal(err)
		}
		if f := leaked(string(out)); f != "" {
			t.Errorf("helm.template holds the value (%s):\n%s", f, out)
		}
	})
}

// TestSecretCopiedIntoAConfigMap (the red-team's H1): a chart that copies
// a value of a secret-looking key into a ConfigMap (its data and an
// annotation) is planned with a warning that names the object and the key,
// never the value, and the policy judges the ConfigMap as a write of
// secret values: refused unless allowSecretWrites.
func TestSecretCopiedIntoAConfigMap(t *testing.T) {
	const canary = "Xq7w-Pa55-9c1e7b-zz" // shares no six characters with the test's namespace
	a := newAdapter(t)
	ns := cp.Namespace(t)
	raw, _ := json.Marshal(map[string]any{"release": "leaky", "namespace": ns, "chart": chart("tricky"), "values": map[string]any{"db": map[string]any{"password": canary}, "copy": true}})
	change, _, err := a.Preview(context.Background(), "helm.install", raw)
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := json.Marshal(change)
	if strings.Contains(string(cb), canary) {
		t.Fatalf("the plan holds the value:\n%s", cb)
	}
	want := "⚠ ConfigMap " + ns + "/scrub-leak holds the value of db.password, a secret-looking key (value not shown): whoever may read a ConfigMap reads it; judged as a write of secret values (allowSecretWrites)"
	if !slices.Contains(change.Diff, want) {
		t.Errorf("the plan does not warn:\n%s", strings.Join(change.Diff, "\n"))
	}
	sensitive := 0
	for _, o := range change.Objects {
		if o.Kind == "ConfigMap" && o.Name == "scrub-leak" && o.Sensitive {
			sensitive++
		}
	}
	if sensitive != 1 {
		t.Errorf("the ConfigMap is not judged as holding secret values: %+v", change.Objects)
	}
	if r, _ := (policy.Policy{}).WithDefaults().Judge(change); r == nil || r.Rule != policy.RuleSecretWrites {
		t.Errorf("the default policy does not refuse it as a Secret write: %+v", r)
	}
	if r, _ := (policy.Policy{AllowSecretWrites: true}).WithDefaults().Judge(change); r != nil {
		t.Errorf("allowSecretWrites still refuses it: %+v", r)
	}
	// Without the copy, nothing is said.
	raw, _ = json.Marshal(map[string]any{"release": "clean", "namespace": ns, "chart": chart("tricky"), "values": map[string]any{"db": map[string]any{"password": canary}}})
	change, _, err = a.Preview(context.Background(), "helm.install", raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range change.Diff {
		if strings.Contains(l, "secret-looking key") {
			t.Errorf("a chart that copies nothing is warned about: %s", l)
		}
	}
}
