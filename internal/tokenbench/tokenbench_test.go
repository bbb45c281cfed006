package tokenbench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/internal/controlplane"
	"github.com/kubecode/kubecode/internal/scenario"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

var (
	cp    *controlplane.ControlPlane
	truth *scenario.Truth
)

func TestMain(m *testing.M) { os.Exit(scenario.Main(&cp, &truth, m.Run)) }

// kubecodeSide connects to a kubecode broker in mode over an in-memory
// transport (the transport costs no tokens).
func kubecodeSide(t *testing.T, name string, mode broker.Mode) *Side {
	t.Helper()
	a, err := kubernetes.New(cp.Admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	br := bridge.New([]bridge.Provider{a}, nil)
	t.Cleanup(func() { _ = br.Close() })
	b := broker.New(br, &broker.Options{Mode: mode, Logger: slog.New(slog.DiscardHandler)})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := b.Server().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	side, err := Connect(context.Background(), name, ct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { side.Close(); ss.Wait() })
	return side
}

// peerBinary is containers/kubernetes-mcp-server as scripts/test installs
// it from npm, or $KUBECODE_PEER.
func peerBinary() string {
	if p := os.Getenv("KUBECODE_PEER"); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "kubecode", "peer", "node_modules", "kubernetes-mcp-server-linux-amd64", "bin", "kubernetes-mcp-server-linux-amd64")
}

func peerSide(t *testing.T) *Side {
	t.Helper()
	bin := peerBinary()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("the peer is not installed at %s (scripts/test installs it with npm): %v", bin, err)
	}
	cmd := exec.Command(bin, "--kubeconfig", cp.AdminKubeconfig, "--log-file", filepath.Join(t.TempDir(), "peer.log"))
	side, err := Connect(context.Background(), "kubernetes-mcp-server", &mcp.CommandTransport{Command: cmd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { side.Close() })
	return side
}

// TestTokens answers each scenario on each side, checks every answer
// against the scenario's truth, and reports the tokens each side cost.
func TestTokens(t *testing.T) {
	type want struct {
		sc     *Scenario
		answer any
	}
	health := map[string]string{}
	for _, c := range truth.CrashLooping {
		if c.Namespace == "payments" {
			health[c.Namespace+"/"+c.Pod] = c.LastLogLine
		}
	}
	restarts := map[string]int{}
	for _, p := range truth.Restarted {
		restarts[p.Namespace+"/"+p.Name] = int(p.Restarts)
	}
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	deployments := map[string]DeploymentFacts{}
	for _, n := range []string{"checkout", "recommendation"} {
		d, err := cs.AppsV1().Deployments("shop").Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f := DeploymentFacts{ReadyReplicas: int(d.Status.ReadyReplicas)}
		for _, c := range d.Spec.Template.Spec.Containers {
			f.Images = append(f.Images, c.Image)
		}
		deployments["shop/"+n] = f
	}
	scenarios := []want{
		{HealthScan("payments"), health},
		{RestartSummary(), restarts},
		{TwoDeployments("shop", "checkout", "recommendation"), deployments},
	}

	sides := []struct {
		kind string
		side func(t *testing.T) *Side
	}{
		{KindPeer, peerSide},
		{KindDirect, func(t *testing.T) *Side { return kubecodeSide(t, "kubecode direct", broker.ModeDirect) }},
		{KindCode, func(t *testing.T) *Side { return kubecodeSide(t, "kubecode code", broker.ModeCode) }},
	}
	runs := map[string]map[string]*Run{} // scenario → kind → run
	for _, s := range sides {
		t.Run(s.kind, func(t *testing.T) {
			side := s.side(t)
			for _, w := range scenarios {
				start := time.Now()
				run, err := w.sc.Run(context.Background(), side, s.kind)
				if err != nil {
					t.Errorf("%v", err)
					continue
				}
				got := reflectNew(w.answer)
				if err := json.Unmarshal([]byte(run.Answer), got); err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(w.answer, deref(got)); d != "" {
					t.Errorf("%s: wrong answer (-truth +%s):\n%s", w.sc.Name, side.Name, d)
					continue
				}
				t.Logf("%s: %d tokens, %d calls, %s", w.sc.Name, run.Total(), len(run.Calls), time.Since(start).Round(time.Millisecond))
				if runs[w.sc.Name] == nil {
					runs[w.sc.Name] = map[string]*Run{}
				}
				runs[w.sc.Name][s.kind] = run
			}
		})
	}

	var b strings.Builder
	fmt.Fprintf(&b, "| scenario | side | definitions | calls | context without definitions | total | cumulative input |\n|---|---|---|---|---|---|---|\n")
	for _, w := range scenarios {
		for _, s := range sides {
			r := runs[w.sc.Name][s.kind]
			if r == nil {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d |\n", w.sc.Name, r.Side, r.definitionTokens(), len(r.Calls), r.WithoutDefinitions(), r.Total(), r.CumulativeInput())
		}
		code, peer := runs[w.sc.Name][KindCode], runs[w.sc.Name][KindPeer]
		if code != nil && peer != nil {
			reduction := 100 * (1 - float64(code.CumulativeInput())/float64(peer.CumulativeInput()))
			fmt.Fprintf(&b, "| %s | code vs peer | | | | | %.0f %% fewer |\n", w.sc.Name, reduction)
			if code.CumulativeInput() >= peer.CumulativeInput() {
				t.Errorf("%s: code mode's cumulative input %d is not below the peer's %d", w.sc.Name, code.CumulativeInput(), peer.CumulativeInput())
			}
		}
	}
	t.Logf("o200k_base tokens, demo cluster:\n%s", b.String())
}

func reflectNew(v any) any {
	switch v.(type) {
	case map[string]string:
		return &map[string]string{}
	case map[string]int:
		return &map[string]int{}
	case map[string]DeploymentFacts:
		return &map[string]DeploymentFacts{}
	}
	panic(fmt.Sprintf("no answer type for %T", v))
}

func deref(p any) any {
	switch t := p.(type) {
	case *map[string]string:
		return *t
	case *map[string]int:
		return *t
	case *map[string]DeploymentFacts:
		return *t
	}
	return p
}
