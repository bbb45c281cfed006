package helm_test

import (
	"strings"
	"testing"

	"github.com/kubecode/kubecode/internal/golden"
)

// TestHelmPlansAReviewerReads: a Helm install and upgrade read, per object,
// as a reviewer needs them — what each new object is, old → new for each
// changed value, what goes — in a golden file.
func TestHelmPlansAReviewerReads(t *testing.T) {
	a := newAdapter(t)
	ns := cp.Namespace(t)
	var out strings.Builder
	write := func(title string, diff []string) {
		out.WriteString("== " + title + "\n")
		for _, l := range diff {
			out.WriteString("   " + strings.ReplaceAll(l, ns, "NS") + "\n")
		}
	}
	args := map[string]any{"release": "web", "namespace": ns, "chart": chart("web-app"), "wait": false}
	c, _, err := preview(t, a, "review-1", "helm.install", args)
	if err != nil {
		t.Fatal(err)
	}
	write("install web-app", c.Diff)
	install(t, a, ns, "web", "web-app", nil)
	c, _, err = preview(t, a, "review-2", "helm.upgrade", map[string]any{"release": "web", "namespace": ns, "chart": chart("web-app"), "wait": false,
		"values": map[string]any{"image": map[string]any{"tag": "1.28"}, "replicaCount": 0, "env": map[string]any{"LOG_LEVEL": "info", "DEBUG": "1"},
			"config": map[string]any{"greeting": "hi"}, "autoscaling": map[string]any{"enabled": false}}})
	if err != nil {
		t.Fatal(err)
	}
	write("upgrade: image 1.28, replicas 0, env DEBUG, greeting, no autoscaler", c.Diff)
	golden.Check(t, "plans.txt", []byte(out.String()))
}
