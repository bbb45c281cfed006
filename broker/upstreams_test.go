package broker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/adapters/upstream"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/catalog/secrets"
	"github.com/kubecode/kubecode/internal/refservers"
	"github.com/kubecode/kubecode/internal/tokenbench"
	"github.com/kubecode/kubecode/internal/tokencount"
)

// upstreamFixture is a broker over the test cluster and real upstream MCP
// servers (the reference filesystem and everything servers, and the peer
// kubernetes-mcp-server), each tool pinned as an operator would.
type upstreamFixture struct {
	b      *broker.Broker
	ledger *bytes.Buffer
	dir    string // the filesystem server's root
}

func newUpstreamFixture(t *testing.T, pol policy.Policy, names ...string) *upstreamFixture {
	t.Helper()
	fx := &upstreamFixture{dir: t.TempDir()}
	var cfgs []upstream.Config
	for _, name := range names {
		var cfg upstream.Config
		var err error
		switch name {
		case "files":
			cfg.Command, err = refservers.Command(refservers.Filesystem, fx.dir)
			cfg.TrustAnnotations = true
			cfg.Tools = map[string]upstream.Tool{"move_file": {Inverse: &upstream.Inverse{Tool: "move_file",
				Args: map[string]any{"source": "$args.destination", "destination": "$args.source"}}}}
		case "everything":
			cfg.Command, err = refservers.Command(refservers.Everything)
		case "peer", "peer-open", "peer_cluster":
			bin := tokenbench.PeerBinary()
			if _, err = os.Stat(bin); err == nil {
				cfg.Command = []string{bin, "--kubeconfig", cp.AdminKubeconfig, "--log-file", filepath.Join(t.TempDir(), "peer.log")}
				cfg.TrustAnnotations = true
			}
			if name == "peer_cluster" {
				cfg.Cluster = "default"
			}
			if name == "peer" {
				// A tool that returns the credentials it holds is no read
				// an operator serves (peer-open does, as the red-team's
				// U3 configuration did).
				cfg.Tools = map[string]upstream.Tool{"configuration_view": {Hidden: true}}
			}
		}
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal(err)
			}
			t.Skip(err)
		}
		cfg.Name = strings.ReplaceAll(name, "-", "_")
		cfgs = append(cfgs, cfg)
	}
	raw, _ := json.Marshal(map[string]any{"upstreams": cfgs})
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := upstream.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pins := &upstream.Pins{}
	providers := []bridge.Provider{}
	reg := secrets.New(nil) // one boundary, as cmd/kubecode wires it
	a, err := kubernetes.New(cp.Admin, &kubernetes.Options{Secrets: reg})
	if err != nil {
		t.Fatal(err)
	}
	providers = append(providers, a)
	var ups []*upstream.Upstream
	for _, cfg := range f.Upstreams {
		u := upstream.New(cfg, &upstream.Options{PinsPath: f.PinsPath(), Secrets: reg})
		t.Cleanup(func() { _ = u.Close() })
		ups = append(ups, u)
		providers = append(providers, u)
	}
	// The operator reviews and pins every tool (kubecode upstreams pin).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, u := range ups {
		st := u.Status(ctx)
		if st.Error != "" {
			t.Fatalf("upstream %s: %s", st.Name, st.Error)
		}
		for _, tool := range st.Tools {
			pins.Pin(st.Name, tool.Tool, tool.SHA256, tool.Declaration, time.Now())
		}
	}
	if err := pins.Write(f.PinsPath()); err != nil {
		t.Fatal(err)
	}
	fx.ledger = &bytes.Buffer{}
	br := bridge.New(providers, &bridge.Options{Policy: pol, Ledger: fx.ledger, RefreshInterval: 100 * time.Millisecond, Secrets: reg})
	t.Cleanup(func() { _ = br.Close() })
	fx.b = broker.New(br, &broker.Options{Logger: slog.New(slog.DiscardHandler), ApprovalWait: 500 * time.Millisecond})
	return fx
}

// applied counts the ledger's applied calls of op.
func (fx *upstreamFixture) applied(op string) int {
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(fx.ledger.String()), "\n") {
		var e bridge.Entry
		if json.Unmarshal([]byte(line), &e) == nil && e.Operation == op && e.Decision == "applied" {
			n++
		}
	}
	return n
}

func TestUpstreamToolsThroughTheGate(t *testing.T) {
	fx := newUpstreamFixture(t, policy.Policy{}, "files", "everything")
	cs := connect(t, fx.b)
	if err := os.WriteFile(filepath.Join(fx.dir, "owners.json"), []byte(`{"web":"team-shop"}`), 0o600); err != nil {
		t.Fatal(err)
	}

	text, _ := callText(t, cs, "search_tools", map[string]any{"query": "write a file"})
	if !strings.Contains(text, "tools.files.write_file(") || !strings.Contains(text, "upstream files") {
		t.Errorf("search does not find files.write_file with its declaration and upstream:\n%s", text)
	}

	// A read the trusted server says is one: answered at once.
	var owners string
	execJSON(t, cs, `const r = await tools.files.read_text_file({ path: '`+fx.dir+`/owners.json' })
return JSON.stringify(r)`, &owners)
	if !strings.Contains(owners, "team-shop") {
		t.Errorf("read_text_file: %s", owners)
	}

	// A write is planned: the plan shows the upstream, the tool and the
	// exact arguments, and nothing is written.
	note := filepath.Join(fx.dir, "note.txt")
	code := `await tools.files.write_file({ path: '` + note + `', content: 'rolled web\n' })
return 'written'`
	text, isErr, sc := execute(t, cs, map[string]any{"code": code})
	for _, want := range []string{"files.write_file MCP tool files.write_file", "calls tool write_file of upstream files;", `content: "rolled web\n"`, `path: "` + note + `"`, "none has a dry run"} {
		if isErr || !strings.Contains(text, want) {
			t.Errorf("the plan does not say %q:\n%s", want, text)
		}
	}
	if _, err := os.Stat(note); err == nil {
		t.Fatal("a planned write wrote the file")
	}
	// Approved by a person, the re-run makes that call once.
	id := approved(t, fx.b, sc)
	if text, isErr, _ := execute(t, cs, map[string]any{"code": code, "approve": id}); isErr || !strings.Contains(text, "written") {
		t.Fatalf("the approved re-run:\n%s", text)
	}
	if got, err := os.ReadFile(note); err != nil || string(got) != "rolled web\n" {
		t.Fatalf("the file after the approved run: %q, %v", got, err)
	}
	if text, isErr, _ := execute(t, cs, map[string]any{"code": code, "approve": id}); !isErr && !strings.Contains(text, "planned") {
		t.Errorf("the plan applied twice:\n%s", text)
	}
	if n := fx.applied("files.write_file"); n != 1 {
		t.Errorf("write_file applied %d times; want once:\n%s", n, fx.ledger)
	}

	// An untrusted server's readOnlyHint makes no read.
	text, _, sc = execute(t, cs, map[string]any{"code": `return await tools.everything.echo({ message: 'hi' })`})
	if planID(t, sc) == "" || !strings.Contains(text, "everything.echo MCP tool everything.echo") {
		t.Errorf("echo of an untrusted server is not planned:\n%s", text)
	}

	// Read-only: refused, with why.
	ro := newUpstreamFixture(t, policy.Policy{Mode: policy.ModeReadOnly}, "files")
	text, _, _ = execute(t, connect(t, ro.b), map[string]any{"code": code})
	if !strings.Contains(text, "refused") || !strings.Contains(text, "read-only") {
		t.Errorf("a write in read-only mode:\n%s", text)
	}
	if _, err := os.Stat(filepath.Join(ro.dir, "note.txt")); err == nil {
		t.Error("a read-only server wrote the file")
	}
}

// A question that needs the cluster and an upstream: one script, an
// answer of a few hundred tokens.
func TestUpstreamJoinAnswersInAFewHundredTokens(t *testing.T) {
	fx := newUpstreamFixture(t, policy.Policy{}, "files")
	ns := "join-" + strings.ToLower(t.Name()[len(t.Name())-6:])
	kubectl(t, "create", "namespace", ns)
	t.Cleanup(func() {
		_ = osexec.Command("kubectl", "--kubeconfig", cp.AdminKubeconfig, "delete", "namespace", ns, "--wait=false").Run()
	})
	for _, d := range []string{"web", "api", "worker"} {
		kubectl(t, "-n", ns, "create", "deployment", d, "--image=nginx:1.27")
	}
	if err := os.WriteFile(filepath.Join(fx.dir, "owners.json"), []byte(`{"web":"team-shop","api":"team-platform"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code := `const deps = await tools.kubernetes.deployments.list({ namespace: '` + ns + `' })
const file = await tools.files.read_text_file({ path: '` + fx.dir + `/owners.json' })
const owners = JSON.parse(typeof file === 'string' ? file : (file as any).content)
return deps.map(d => ({ deployment: d.metadata.name, owner: owners[d.metadata.name] ?? 'nobody' }))`
	text, isErr := callText(t, connect(t, fx.b), "execute_code", map[string]any{"code": code})
	if isErr {
		t.Fatalf("the join:\n%s", text)
	}
	for _, want := range []string{`"owner":"team-shop"`, `"owner":"team-platform"`, `"deployment":"worker","owner":"nobody"`} {
		if !strings.Contains(strings.ReplaceAll(text, " ", ""), strings.ReplaceAll(want, " ", "")) {
			t.Errorf("the answer lacks %s:\n%s", want, text)
		}
	}
	if n := tokencount.Count(text); n > 300 {
		t.Errorf("the answer is %d tokens; want a few hundred at most:\n%s", n, text)
	}
}

// kubernetes-mcp-server itself as an upstream: its reads are reads (its
// annotations trusted), its deletes planned.
func TestKubernetesMCPServerAsUpstream(t *testing.T) {
	fx := newUpstreamFixture(t, policy.Policy{}, "peer")
	cs := connect(t, fx.b)
	var got string
	execJSON(t, cs, `const r = await tools.peer.namespaces_list({})
return JSON.stringify(r)`, &got)
	if !strings.Contains(got, "kube-system") {
		t.Errorf("peer.namespaces_list: %s", got)
	}
	kubectl(t, "-n", "default", "create", "configmap", "peer-keep", "--from-literal=a=b")
	t.Cleanup(func() {
		_ = osexec.Command("kubectl", "--kubeconfig", cp.AdminKubeconfig, "-n", "default", "delete", "configmap", "peer-keep").Run()
	})
	text, _, sc := execute(t, cs, map[string]any{"code": `return await tools.peer.resources_delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'peer-keep' })`})
	if planID(t, sc) == "" || !strings.Contains(text, `name: "peer-keep"`) {
		t.Errorf("the peer's delete is not planned:\n%s", text)
	}
	if kubectl(t, "-n", "default", "get", "configmap", "peer-keep", "-o", "name") != "configmap/peer-keep" {
		t.Error("a planned delete deleted")
	}
}

// TestClusterUpstreamWritesAreRefused (the red-team's U8): through an
// upstream that writes to the cluster kubecode serves, a privileged
// hostPID pod in kube-system was one approval of an argument list, where
// kubecode's own operations refuse it. Marked as acting on the cluster,
// its writes are refused and the answer names kubecode's own way; its
// reads still answer.
func TestClusterUpstreamWritesAreRefused(t *testing.T) {
	fx := newUpstreamFixture(t, policy.Policy{}, "peer_cluster")
	cs := connect(t, fx.b)
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"root","namespace":"kube-system"},"spec":{"hostPID":true,"containers":[{"name":"c","image":"busybox","securityContext":{"privileged":true}}]}}`
	text, _, sc := execute(t, cs, map[string]any{"code": "return await tools.peer_cluster.resources_create_or_update({ resource: " + strconv.Quote(pod) + " })"})
	if sc["plan"] != nil || !strings.Contains(text, "acts on cluster default") || !strings.Contains(text, "tools.kubernetes.*") {
		t.Errorf("a write through a cluster upstream was not refused:\n%s", text)
	}
	var got string
	execJSON(t, cs, `return JSON.stringify(await tools.peer_cluster.namespaces_list({}))`, &got)
	if !strings.Contains(got, "kube-system") {
		t.Errorf("a read through a cluster upstream: %s", got)
	}
}

// TestUpstreamEchoesNoClusterCredential (the red-team's U3):
// kubernetes-mcp-server served with its annotations trusted and
// configuration_view not hidden hands a script its kubeconfig as a read;
// the cluster-admin token in it, which kubecode holds too, is hidden at
// the boundary. The fixture's own "peer" hides the tool, as the docs say.
func TestUpstreamEchoesNoClusterCredential(t *testing.T) {
	if cp.Admin.BearerToken == "" {
		t.Fatal("the admin has no bearer token: the test proves nothing")
	}
	fx := newUpstreamFixture(t, policy.Policy{}, "peer-open")
	text, isErr, _ := execute(t, connect(t, fx.b), map[string]any{"code": `return JSON.stringify(await tools.peer_open.configuration_view({ minified: false }))`})
	if isErr || strings.Contains(text, cp.Admin.BearerToken) || strings.Contains(fx.ledger.String(), cp.Admin.BearerToken) {
		t.Fatalf("the cluster's token reached the script or the ledger (error %v):\n%s", isErr, text)
	}
	if !strings.Contains(text, "[hidden: a cluster credential (bearer token)]") || !strings.Contains(fx.ledger.String(), `"hidden":["a cluster credential (bearer token)"]`) {
		t.Errorf("the answer or the ledger does not say what was hidden:\n%s\n%s", text, fx.ledger)
	}
}

// A revert undoes an upstream call the operator declared an inverse for;
// the execution's answer says which calls no revert undoes.
func TestUpstreamRevert(t *testing.T) {
	fx := newUpstreamFixture(t, policy.Policy{Mode: policy.ModeApply}, "files")
	cs := connect(t, fx.b)
	a, b := filepath.Join(fx.dir, "a.txt"), filepath.Join(fx.dir, "b.txt")
	if err := os.WriteFile(a, []byte("A"), 0o600); err != nil {
		t.Fatal(err)
	}
	text, isErr, sc := execute(t, cs, map[string]any{"code": `await tools.files.move_file({ source: '` + a + `', destination: '` + b + `' })
await tools.files.write_file({ path: '` + fx.dir + `/c.txt', content: 'C' })
return 'done'`})
	exec, _ := sc["execution"].(string)
	if isErr || exec == "" {
		t.Fatalf("the applied execution:\n%s", text)
	}
	if no := fmt.Sprint(sc["noUndo"]); !strings.Contains(no, "the call of upstream tool write_file is not undone: the operator declares no inverse for it (tools.write_file.inverse)") || strings.Contains(no, "move_file") {
		t.Errorf("the answer's noUndo: %s", no)
	}
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("the move was not made: %v", err)
	}
	var got bridge.RevertResult
	execJSON(t, cs, `return await tools.kubecode.revert({ execution: '`+exec+`' })`, &got)
	if len(got.Restored) != 1 || got.Restored[0] != "MCP tool files.move_file" || len(got.Conflicts) != 0 {
		t.Errorf("the revert: %+v", got)
	}
	if data, err := os.ReadFile(a); err != nil || string(data) != "A" {
		t.Errorf("a.txt after the revert: %q, %v", data, err)
	}
}
