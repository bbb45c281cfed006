package layout

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kubecode/kubecode/"

// rules: a package (and the packages below it) must not depend, directly
// or through others, on anything that starts with a forbidden prefix.
var rules = []struct {
	pkg    string
	forbid []string
	why    string
}{
	{"runtime", []string{module + "bridge", module + "catalog", module + "broker", module + "adapters", "k8s.io/", "helm.sh/", "sigs.k8s.io/"},
		"the sandbox knows no Kubernetes, no catalog and no bridge; credentials never enter it"},
	{"catalog", []string{module + "bridge", module + "broker", module + "runtime", module + "adapters", "k8s.io/", "helm.sh/", "sigs.k8s.io/"},
		"the catalog knows no provider"},
	{"bridge", []string{module + "broker", module + "runtime", module + "adapters", "k8s.io/", "helm.sh/", "sigs.k8s.io/"},
		"the bridge serves every provider through one interface"},
	{"broker", []string{module + "adapters", "k8s.io/", "helm.sh/", "sigs.k8s.io/"},
		"the broker reaches providers only through the bridge"},
	{"adapters", []string{module + "broker", module + "runtime", module + "bridge"},
		"adapters implement operations; they are called, they call nothing above them"},
	{"adapters/kubernetes", []string{module + "adapters/helm"}, "one adapter does not know another"},
	{"adapters/helm", []string{module + "adapters/kubernetes"}, "one adapter does not know another: what both know of the API is in adapters/kubeapi"},
	{"adapters/kubeapi", []string{module + "adapters/kubernetes", module + "adapters/helm"}, "shared knowledge sits below the adapters"},
	{"cmd/kubecode-worker", []string{module + "bridge", module + "catalog", module + "broker", module + "adapters", module + "internal/controlplane", "k8s.io/", "helm.sh/", "sigs.k8s.io/", "github.com/modelcontextprotocol/", "github.com/blevesearch/", "github.com/spf13/"},
		"the worker links the sandbox alone: it starts fast and small, and holds no code that could reach a cluster"},
}

// testOnly are packages only tests may import.
var testOnly = []string{module + "internal/golden", module + "internal/tstest"}

// known are dependencies that break a rule today, each with the work that
// removes it; a new one fails the test, and so does one that is gone (so
// this list shrinks with the code).
var known = map[string]string{}

func TestLayout(t *testing.T) {
	// One go list: each package, its dependencies, "|", its own imports.
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}} | {{join .Imports " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps, imports := map[string][]string{}, map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		before, after, _ := strings.Cut(line, " | ")
		f := strings.Fields(before)
		pkg := strings.TrimPrefix(f[0], module)
		deps[pkg], imports[pkg] = f[1:], strings.Fields(after)
	}
	if len(deps) < 10 || deps["runtime"] == nil {
		t.Fatalf("go list found %d packages: not this repository's", len(deps))
	}
	seen := map[string]bool{}
	for _, r := range rules {
		for pkg, ds := range deps {
			if pkg != r.pkg && !strings.HasPrefix(pkg, r.pkg+"/") {
				continue
			}
			for _, d := range ds {
				for _, f := range r.forbid {
					if d != f && !strings.HasPrefix(d, f) {
						continue
					}
					if d == module+pkg || strings.HasPrefix(d, module+pkg+"/") {
						continue // itself and what is below it
					}
					key := pkg + " -> " + d
					if why, ok := known[key]; ok {
						seen[key] = true
						t.Logf("known: %s (%s)", key, why)
						continue
					}
					t.Errorf("%s depends on %s: %s", pkg, d, r.why)
				}
			}
		}
	}
	for k := range known {
		if !seen[k] {
			t.Errorf("%s is no longer a dependency: remove it from known", k)
		}
	}
	// Packages only tests use: no package's own code imports them.
	for pkg, imps := range imports {
		for _, imp := range imps {
			if slices.Contains(testOnly, imp) {
				t.Errorf("%s imports %s, which only tests may", pkg, imp)
			}
		}
	}
}
