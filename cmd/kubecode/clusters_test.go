package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/internal/controlplane"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// twoContexts starts a second local control plane and writes a
// kubeconfig with two contexts: "one" (the package's seeded cluster) and
// "two" (the new one, bare).
func twoContexts(t *testing.T) string {
	t.Helper()
	cp2, err := controlplane.Start(context.Background(), &controlplane.Options{Static: true, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp2.Stop() })
	merged := clientcmdapi.NewConfig()
	for name, path := range map[string]string{"one": cp.AdminKubeconfig, "two": cp2.AdminKubeconfig} {
		c, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ctx := c.Contexts[c.CurrentContext]
		merged.Clusters[name] = c.Clusters[ctx.Cluster]
		merged.AuthInfos[name] = c.AuthInfos[ctx.AuthInfo]
		merged.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	}
	merged.CurrentContext = "one"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*merged, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestManyClusters: one server serves two clusters (two local control
// planes) named by kubeconfig context: calls pick one with context, the
// catalog is each cluster's (a CRD only one serves says so), and each
// cluster has its policy (two read-only, one planning).
func TestManyClusters(t *testing.T) {
	kubeconfig := twoContexts(t)
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte("mode: plan\ncontexts:\n  two:\n    mode: read-only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runWith := func(stdin string, args ...string) string {
		t.Helper()
		out, err := run2(kubeconfig, stdin, append([]string{"--contexts", "one,two", "--policy", policy, "--isolation", "none"}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	out := runWith(`const [one, two] = await Promise.all([tools.kubernetes.namespaces.list(), tools.kubernetes.namespaces.list({context: 'two'})])
return [one.some((n) => n.metadata.name === 'shop'), two.some((n) => n.metadata.name === 'shop')]`, "exec", "-")
	if first, _, _ := strings.Cut(out, "\n"); first != "[true,false]" {
		t.Errorf("namespace shop on one and two: %s", out)
	}
	// A CRD only one serves, called on two: the type check stops it,
	// and without one the call says where it exists.
	widgets := `try { await tools.kubernetes.widgets.list({context: 'two'}) } catch (e) { return e.message }`
	if out, _ = run2(kubeconfig, widgets, "--contexts", "one,two", "exec", "-"); !strings.Contains(out, `type error: Type '"two"' is not assignable to type '"one"'`) {
		t.Errorf("type check of a CRD only one serves, called on two: %s", out)
	}
	out = runWith(widgets, "--typecheck", "off", "exec", "-")
	if !strings.Contains(out, "kubernetes.widgets.list does not exist on cluster two; it does on one") {
		t.Errorf("a CRD only one serves, called on two: %s", out)
	}
	out = runWith("", "search", "kubernetes.widgets.list")
	if !strings.Contains(out, `context?: "one"`) || !strings.Contains(out, "Clusters: one.") {
		t.Errorf("search does not say which cluster serves widgets:\n%s", out)
	}
	out = runWith(`const r = await Promise.allSettled([
  tools.kubernetes.configmaps.create({namespace: 'default', object: {metadata: {name: 'hello'}, data: {a: 'b'}}}),
  tools.kubernetes.configmaps.create({context: 'two', namespace: 'default', object: {metadata: {name: 'hello'}, data: {a: 'b'}}}),
])
return r.map((x) => x.status === 'fulfilled' ? 'planned' : x.reason.message)`, "exec", "-")
	var got []string
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &got); err != nil || len(got) != 2 || got[0] != "planned" ||
		!strings.Contains(got[1], "read-only") || !strings.Contains(out, "--- no plan: a change was refused or its dry run failed (kubernetes.configmaps.create: ") {
		// The change planned on one is not approvable alone: the script's
		// other change was refused.
		t.Errorf("changes on one (plan) and two (read-only):\n%s", out)
	}
}

// run2 runs the kubecode binary with a kubeconfig of its own.
func run2(kubeconfig, stdin string, args ...string) (string, error) {
	return runCmd(append([]string{"--kubeconfig", kubeconfig}, args...), stdin)
}

// runCmd runs the kubecode binary with args and stdin; the output holds
// stdout, then stderr.
func runCmd(args []string, stdin string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return string(out) + stderr.String(), err
}
