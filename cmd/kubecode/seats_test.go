package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

var approveNext = regexp.MustCompile(`--approve (plan-[0-9a-f]+)`)

// TestTerminalSeatsOnTheRunningServer: with a kubecode server running
// here, the terminal's commands need no hidden set-up (no shared plan
// key, no plans namespace): kubecode exec plans on that server and says
// what to type next; the same command with --approve PLAN approves it as
// the person at the terminal and applies it; kubecode plans shows it
// applied, with every field; kubecode revert undoes the execution there;
// a denial's reason is kept.
func TestTerminalSeatsOnTheRunningServer(t *testing.T) {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "approvals.json")
	u := startHTTP(t, []string{"KUBECODE_APPROVALS_FILE=" + file})
	waitReady(t, u)
	// The terminal's commands, as a person types them: no cluster flags.
	kc := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "KUBECODE_APPROVALS_FILE="+file)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubecode %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	next := func(out string) string {
		t.Helper()
		m := approveNext.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("nothing says what to type next:\n%s", out)
		}
		return m[1]
	}
	script := filepath.Join(t.TempDir(), "patch.ts")
	if err := os.WriteFile(script, []byte(`await tools.kubernetes.configmaps.patch({ namespace: '`+ns+`', name: 'cfg', patch: { data: { a: '2' } } })
return 'patched'`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := kc("exec", script)
	id := next(out)
	if !strings.Contains(out, `data.a: "1" → "2"`) || !strings.Contains(out, "kubecode exec "+script+" --approve "+id) {
		t.Fatalf("the plan at the terminal:\n%s", out)
	}
	// Another script run with --approve of this plan approves nothing.
	other := filepath.Join(t.TempDir(), "other.ts")
	if err := os.WriteFile(other, []byte(`return 'other'`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "exec", other, "--approve", id)
	cmd.Env = append(os.Environ(), "KUBECODE_APPROVALS_FILE="+file)
	if o, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(o), "was not made by this script") {
		t.Errorf("another script approving this plan: %v\n%s", err, o)
	}
	if out = kc("plans", id); !strings.Contains(out, "["+"pending]") || !strings.Contains(out, "every field it sets") || !strings.Contains(out, `before: "1"`) {
		t.Errorf("kubecode plans %s:\n%s", id, out)
	}
	out = kc("exec", script, "--approve", id)
	e := undoExec.FindStringSubmatch(out)
	if e == nil || !strings.Contains(out, "1 of 1 changes applied") || !strings.Contains(out, "(terminal, ") {
		t.Fatalf("the approved run:\n%s", out)
	}
	if got, _ := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{}); got.Data["a"] != "2" {
		t.Fatalf("after the approved run: %v", got.Data)
	}
	if out = kc("plans", id); !strings.Contains(out, "[applied]") || !strings.Contains(out, "applied 1 of 1 changes") || !strings.Contains(out, e[1]) {
		t.Errorf("kubecode plans %s after the run:\n%s", id, out)
	}
	// The revert runs where the execution was recorded.
	out = kc("revert", e[1])
	rid := next(out)
	if !strings.Contains(out, `data.a: "2" → "1"`) || !strings.Contains(out, "kubecode revert "+e[1]+" --approve "+rid) {
		t.Fatalf("the revert plan:\n%s", out)
	}
	kc("revert", e[1], "--approve", rid)
	if got, _ := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{}); got.Data["a"] != "1" {
		t.Errorf("after the revert: %v", got.Data)
	}
	// A long manifest: the plan's text says once how its objects were
	// checked, and kubecode plans prints every object's lines.
	var objs []string
	newNS := ns + "-many"
	objs = append(objs, `{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: '`+newNS+`' } }`)
	for i := range 37 {
		objs = append(objs, fmt.Sprintf(`{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-%02d', namespace: '%s' }, data: { n: '%d' } }`, i, newNS, i))
	}
	many := filepath.Join(t.TempDir(), "many.ts")
	if err := os.WriteFile(many, []byte(`return await tools.kubernetes.apply({ manifest: [`+strings.Join(objs, ",\n")+`] })`), 0o600); err != nil {
		t.Fatal(err)
	}
	out = kc("exec", many)
	mid := next(out)
	if n := strings.Count(out, "validated in namespace"); n != 1 {
		t.Errorf("the long manifest's plan says %d times how objects were validated:\n%s", n, out)
	}
	out = kc("plans", mid)
	for i := range 37 {
		if obj := fmt.Sprintf("create ConfigMap %s/cm-%02d", newNS, i); !strings.Contains(out, obj) {
			t.Errorf("kubecode plans %s does not print %q:\n%s", mid, obj, out)
			break
		}
	}
	kc("deny", mid, "--reason", "too many")

	// A denial keeps its reason.
	did := next(kc("exec", script))
	kc("deny", did, "--reason", "not during the freeze")
	if out = kc("plans", did); !strings.Contains(out, "[denied]") || !strings.Contains(out, `saying "not during the freeze"`) {
		t.Errorf("kubecode plans %s after the denial:\n%s", did, out)
	}
}
