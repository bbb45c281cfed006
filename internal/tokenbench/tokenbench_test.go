package tokenbench

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/internal/controlplane"
	"github.com/kubecode/kubecode/internal/scenario"
)

var (
	cp    *controlplane.ControlPlane
	truth *scenario.Truth
)

func TestMain(m *testing.M) { os.Exit(scenario.Main(&cp, &truth, m.Run)) }

// TestTokens answers each scenario on each side of the demo cluster,
// checks every answer against the truth, and reports the tokens each side
// cost. On every question about one namespace code mode's calls and
// results cost at most 0.8× the peer's (what a later question costs when
// the client caches the tool definitions); on every question its first
// question's cumulative input is at least 80 % less.
func TestTokens(t *testing.T) {
	ctx := context.Background()
	cases, err := Suite(ctx, cp.Admin, truth)
	if err != nil {
		t.Fatal(err)
	}
	sides := []struct {
		kind string
		open func() (*Side, error)
	}{
		{KindPeer, func() (*Side, error) {
			return PeerSide(ctx, PeerBinary(), cp.AdminKubeconfig, filepath.Join(t.TempDir(), "peer.log"))
		}},
		{KindDirect, func() (*Side, error) { return KubecodeSide(ctx, "kubecode direct", cp.Admin, broker.ModeDirect) }},
		{KindCode, func() (*Side, error) { return KubecodeSide(ctx, "kubecode code", cp.Admin, broker.ModeCode) }},
		{KindUpstream, func() (*Side, error) {
			return UpstreamSide(ctx, PeerBinary(), cp.AdminKubeconfig, filepath.Join(t.TempDir(), "peer-upstream.log"), t.TempDir())
		}},
	}
	var results []Result
	peer := map[string]*Run{}
	for _, s := range sides {
		side, err := s.open()
		if err != nil {
			if (s.kind == KindPeer || s.kind == KindUpstream) && os.Getenv("CI") == "" {
				t.Logf("running without the peer: %v", err)
				continue
			}
			t.Fatal(err)
		}
		for _, c := range cases {
			if !c.Scenario.Serves(s.kind) {
				continue
			}
			run, took, err := c.Check(ctx, side, s.kind)
			if err != nil {
				t.Error(err)
				continue
			}
			results = append(results, Result{Scale: "demo", Kind: s.kind, Run: run, Took: took})
			if s.kind != KindPeer {
				for _, call := range run.Calls {
					for _, canary := range truth.Canaries {
						// The API returns Secret data base64-encoded.
						if strings.Contains(call.Result, canary) || strings.Contains(call.Result, base64.StdEncoding.EncodeToString([]byte(canary))) {
							t.Errorf("%s on %s: a Secret value reached the model", c.Scenario.Name, side.Name)
						}
					}
				}
			}
			switch p := peer[c.Scenario.Compared()]; {
			case s.kind == KindPeer:
				peer[c.Scenario.Name] = run
			case (s.kind == KindCode || s.kind == KindUpstream) && p != nil:
				if got, limit := run.CallTokens(), 0.8*float64(p.CallTokens()); c.Scenario.OneNamespace && float64(got) > limit {
					t.Errorf("%s: code mode's calls and results cost %d tokens, over 0.8× the peer's %d", c.Scenario.Name, got, p.CallTokens())
				}
				if got, limit := run.CumulativeInput(), 0.2*float64(p.CumulativeInput()); float64(got) > limit {
					t.Errorf("%s: code mode's first question costs %d tokens, not 80 %% below the peer's %d", c.Scenario.Name, got, p.CumulativeInput())
				}
			}
		}
		side.Close()
	}
	t.Logf("o200k_base tokens on the demo cluster:\n%s\nA session of 10 questions:\n%s", Markdown(results), SessionMarkdown(Sessions(results, 10)))
}

// TestParseTable reads kubectl-style tables whose cells hold spaces.
func TestParseTable(t *testing.T) {
	text := "NAMESPACE   NAME   READY   STATUS             RESTARTS        NOMINATED NODE\n" +
		"payments    a      0/1     CrashLoopBackOff   42 (69s ago)    <none>\n" +
		"shop        b      1/1     Running            0               <none>\n"
	rows := parseTable(text)
	if len(rows) != 2 || rows[0]["RESTARTS"] != "42 (69s ago)" || rows[1]["STATUS"] != "Running" || rows[0]["NOMINATED NODE"] != "<none>" {
		t.Errorf("parseTable = %v", rows)
	}
	if got := rowsWhere(rows, "STATUS", "CrashLoopBackOff", "NAME"); len(got) != 1 || got[0] != "a" {
		t.Errorf("rowsWhere = %v", got)
	}
}
