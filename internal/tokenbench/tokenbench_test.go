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
// cost. Code mode must cost less cumulative input than the peer.
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
	}
	var results []Result
	peer := map[string]int{}
	for _, s := range sides {
		side, err := s.open()
		if err != nil {
			if s.kind == KindPeer {
				t.Logf("running without the peer: %v", err)
				continue
			}
			t.Fatal(err)
		}
		for _, c := range cases {
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
			switch s.kind {
			case KindPeer:
				peer[c.Scenario.Name] = run.CumulativeInput()
			case KindCode:
				if p := peer[c.Scenario.Name]; p > 0 && run.CumulativeInput() >= p {
					t.Errorf("%s: code mode's cumulative input %d is not below the peer's %d", c.Scenario.Name, run.CumulativeInput(), p)
				}
			}
		}
		side.Close()
	}
	t.Logf("o200k_base tokens on the demo cluster:\n%s", Markdown(results))
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
