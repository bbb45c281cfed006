package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/catalog"
)

// changer is a provider with one read and two changing operations; its
// previews describe what the arguments ask for.
type changer struct {
	mu      sync.Mutex
	applied []string
}

func (c *changer) Discover(context.Context) ([]*catalog.Operation, string, error) {
	in := &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
		"name": {Type: "string"}, "replicas": {Type: "integer"}, "data": {Type: "object", AdditionalProperties: &catalog.Schema{Type: "string"}},
	}}
	return []*catalog.Operation{
		{Name: "shop.orders.list", Input: in, Annotations: catalog.Annotations{ReadOnly: true}},
		{Name: "shop.orders.scale", Input: in},
		{Name: "shop.vaults.patch", Input: &catalog.Schema{}, Annotations: catalog.Annotations{Sensitive: true, TargetArgs: []catalog.Path{{"name"}, {"patch", "[]", "path"}}}},
		{Name: "shop.bundles.install", Input: &catalog.Schema{}, Annotations: catalog.Annotations{TargetArgs: []catalog.Path{{"name"}}}},
	}, "v1", nil
}

func (c *changer) Call(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if name == "shop.orders.list" {
		return json.RawMessage(`[]`), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applied = append(c.applied, name+" "+string(args))
	return json.RawMessage(`{"applied":true}`), nil
}

func (c *changer) Preview(_ context.Context, name string, args json.RawMessage) (*catalog.Change, json.RawMessage, error) {
	var a struct {
		Name     string `json:"name"`
		Replicas int    `json:"replicas"`
	}
	_ = json.Unmarshal(args, &a)
	if a.Name == "missing" {
		return nil, nil, statusErr
	}
	if name == "shop.bundles.install" { // many objects, a Secret among them (a Helm release)
		return &catalog.Change{Action: "install", Kind: "Bundle", Namespace: "shop", Name: a.Name,
				Objects: []catalog.Change{{Action: "create", Kind: "Deployment", Namespace: "shop", Name: a.Name}, {Action: "create", Kind: "Secret", Namespace: "shop", Name: a.Name, Sensitive: true}}},
			json.RawMessage(`{"dryRun":true}`), nil
	}
	if name == "shop.vaults.patch" {
		return &catalog.Change{Action: "patch", Kind: "Vault", Namespace: "shop", Name: a.Name, Existed: true, Sensitive: true, Paths: []string{"data.key"}, Diff: []string{"data.key: changed (value not shown)"}},
			json.RawMessage(`{"dryRun":true}`), nil
	}
	return &catalog.Change{Action: "scale", Kind: "Order", Namespace: "shop", Name: a.Name, Existed: true, Paths: []string{"spec.replicas"},
		Diff: []string{"spec.replicas: 1 → " + string(rune('0'+a.Replicas))}}, json.RawMessage(`{"dryRun":true}`), nil
}

func newChanger(t *testing.T, p policy.Policy) (*changer, *Bridge, *bytes.Buffer) {
	t.Helper()
	c := &changer{}
	var ledger bytes.Buffer
	b := New([]Provider{c}, &Options{Ledger: &ledger, Policy: p})
	t.Cleanup(func() { _ = b.Close() })
	return c, b, &ledger
}

// run calls ops in order in one session and returns the error reasons
// ("" for success).
func run(t *testing.T, s *Session, calls ...string) []string {
	t.Helper()
	var reasons []string
	for i, call := range calls {
		name, args, _ := strings.Cut(call, " ")
		req, _ := json.Marshal(Request{JSONRPC: "2.0", ID: json.RawMessage(string(rune('1' + i))), Method: MethodCall,
			Params: json.RawMessage(`{"name":"` + name + `","arguments":` + args + `}`)})
		var resp Response
		if err := json.Unmarshal(s.Handle(context.Background(), req), &resp); err != nil {
			t.Fatal(err)
		}
		r := ""
		if resp.Error != nil {
			r = resp.Error.Data.Reason
		}
		reasons = append(reasons, r)
	}
	return reasons
}

func TestChangesByMode(t *testing.T) {
	calls := []string{`shop.orders.list {}`, `shop.orders.scale {"name":"a","replicas":3}`}
	for _, tc := range []struct {
		mode    policy.Mode
		reasons []string
		applied int
		planned int
	}{
		{policy.ModeReadOnly, []string{"", ReasonRefused}, 0, 0},
		{policy.ModePlan, []string{"", ""}, 0, 1},
		{policy.ModeApply, []string{"", ""}, 1, 0},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			c, b, _ := newChanger(t, policy.Policy{Mode: tc.mode})
			s := b.Session("t")
			if d := cmp.Diff(tc.reasons, run(t, s, calls...)); d != "" {
				t.Errorf("reasons (-want +got):\n%s", d)
			}
			if len(c.applied) != tc.applied || len(s.Planned()) != tc.planned {
				t.Errorf("applied %d, planned %d; want %d, %d", len(c.applied), len(s.Planned()), tc.applied, tc.planned)
			}
		})
	}
}

func TestMaxChanges(t *testing.T) {
	_, b, _ := newChanger(t, policy.Policy{MaxChanges: 2})
	got := run(t, b.Session("t"), `shop.orders.scale {"name":"a"}`, `shop.orders.scale {"name":"b"}`, `shop.orders.scale {"name":"c"}`)
	if d := cmp.Diff([]string{"", "", ReasonRefused}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestApprove: a plan's token applies exactly its changes; a re-run that
// makes another change, other arguments or one change more stops there.
func TestApprove(t *testing.T) {
	code := "the script"
	plan := []string{`shop.orders.scale {"name":"a","replicas":3}`, `shop.orders.scale {"replicas":4,"name":"b"}`}
	for _, tc := range []struct {
		name    string
		rerun   []string
		reasons []string
		applied int
		why     string
	}{
		{"same changes, keys reordered", []string{`shop.orders.scale {"replicas":3,"name":"a"}`, `shop.orders.scale {"name":"b","replicas":4}`}, []string{"", ""}, 2, ""},
		{"other arguments", []string{`shop.orders.scale {"name":"a","replicas":3}`, `shop.orders.scale {"name":"b","replicas":9}`}, []string{"", ReasonDiverged}, 1, "with other arguments"},
		{"another object", []string{`shop.orders.scale {"name":"x","replicas":3}`, `shop.orders.scale {"name":"b","replicas":4}`}, []string{ReasonDiverged, ReasonDiverged}, 0, "Order shop/x"},
		{"one change more", append(append([]string(nil), plan...), `shop.orders.scale {"name":"c"}`), []string{"", "", ReasonDiverged}, 2, "one more"},
		{"another order (parallel calls)", []string{plan[1], plan[0]}, []string{"", ""}, 2, ""},
		{"reads are not changes", []string{`shop.orders.list {}`, plan[0], `shop.orders.list {}`, plan[1]}, []string{"", "", "", ""}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, b, _ := newChanger(t, policy.Policy{})
			s := b.Session("plan")
			run(t, s, plan...)
			p := b.NewPlan(s, code)
			if p == nil || len(p.Changes) != 2 || len(c.applied) != 0 {
				t.Fatalf("plan %+v, applied %v", p, c.applied)
			}
			approved, err := b.Open(b.Sign(p), code)
			if err != nil {
				t.Fatal(err)
			}
			s2 := b.Session("apply")
			s2.Approve(approved, "the test")
			if d := cmp.Diff(tc.reasons, run(t, s2, tc.rerun...)); d != "" {
				t.Errorf("reasons (-want +got):\n%s", d)
			}
			n, why := s2.Applied()
			if n != tc.applied || len(c.applied) != tc.applied || !strings.Contains(why, tc.why) {
				t.Errorf("applied %d (%d calls), why %q; want %d, %q", n, len(c.applied), why, tc.applied, tc.why)
			}
		})
	}
}

// TestApprovalAppliesOnce: a plan is used up as its first change is made:
// a replay changes nothing, while a run that never reached a change (it
// diverged first) leaves the plan for the next.
func TestApprovalAppliesOnce(t *testing.T) {
	code := "the script"
	plan := []string{`shop.orders.scale {"name":"a","replicas":3}`, `shop.orders.scale {"name":"b","replicas":4}`}
	c, b, _ := newChanger(t, policy.Policy{})
	s := b.Session("plan")
	run(t, s, plan...)
	approved, err := b.Open(b.Sign(b.NewPlan(s, code)), code)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(calls ...string) ([]string, *Session) {
		s := b.Session("apply")
		if err := s.Approve(approved, "the test"); err != nil {
			t.Fatal(err)
		}
		return run(t, s, calls...), s
	}
	if reasons, _ := apply(`shop.orders.scale {"name":"x","replicas":3}`); !cmp.Equal(reasons, []string{ReasonDiverged}) || len(c.applied) != 0 {
		t.Fatalf("a diverging run: %v, applied %v", reasons, c.applied)
	}
	if reasons, _ := apply(plan...); !cmp.Equal(reasons, []string{"", ""}) || len(c.applied) != 2 {
		t.Fatalf("the approved run: %v, applied %v", reasons, c.applied)
	}
	reasons, replay := apply(plan...)
	if _, why := replay.Applied(); !cmp.Equal(reasons, []string{ReasonRefused, ReasonDiverged}) || len(c.applied) != 2 || !strings.Contains(why, "was already applied") {
		t.Errorf("a replay: %v (%s), applied %v", reasons, why, c.applied)
	}
}

func TestOpenRefuses(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	clock := now
	b := New([]Provider{&changer{}}, &Options{Now: func() time.Time { return clock }})
	other := New([]Provider{&changer{}}, nil)
	s := b.Session("t")
	run(t, s, `shop.orders.scale {"name":"a"}`)
	token := b.Sign(b.NewPlan(s, "code"))
	enc, sig, _ := strings.Cut(token, ".")
	for _, tc := range []struct {
		name, token, code, want string
		b                       *Bridge
		at                      time.Time
	}{
		{"good", token, "code", "", b, now},
		{"other script", token, "code2", "another script", b, now},
		{"expired", token, "code", "expired", b, now.Add(16 * time.Minute)},
		{"tampered", enc + "x." + sig, "code", "not one this server signed", b, now},
		{"garbage", "hello", "code", "not one this server signed", b, now},
		{"other server's key", token, "code", "not one this server signed", other, now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock = tc.at
			_, err := tc.b.Open(tc.token, tc.code)
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open: %v, want %q", err, tc.want)
			}
		})
	}
	// A bridge of another cluster refuses the plan even with the key.
	shared := []byte("shared key of the replicas")
	staging := New([]Provider{&changer{}}, &Options{PlanKey: shared, Scope: "https://staging:6443"})
	prod := New([]Provider{&changer{}}, &Options{PlanKey: shared, Scope: "https://prod:6443"})
	ss := staging.Session("t")
	run(t, ss, `shop.orders.scale {"name":"a"}`)
	if _, err := prod.Open(staging.Sign(staging.NewPlan(ss, "code")), "code"); err == nil || !strings.Contains(err.Error(), "made for https://staging:6443") {
		t.Errorf("another cluster's plan: %v", err)
	}
	// An unknown mode refuses every change.
	c, odd, _ := newChanger(t, policy.Policy{Mode: "readonly"})
	if got := run(t, odd.Session("t"), `shop.orders.scale {"name":"a"}`); got[0] != ReasonRefused || len(c.applied) != 0 {
		t.Errorf("unknown mode: %v, applied %v", got, c.applied)
	}
	// Replicas sharing a key approve each other's plans.
	key := []byte("shared key of the replicas")
	r1 := New([]Provider{&changer{}}, &Options{PlanKey: key})
	r2 := New([]Provider{&changer{}}, &Options{PlanKey: key})
	s1 := r1.Session("t")
	run(t, s1, `shop.orders.scale {"name":"a"}`)
	if _, err := r2.Open(r1.Sign(r1.NewPlan(s1, "code")), "code"); err != nil {
		t.Errorf("a replica with the same key: %v", err)
	}
}

// kubernetesSecretData are the secret data keys the Kubernetes adapter
// declares on its operations (Annotations.SecretArgs).
var kubernetesSecretData = []string{"data", "stringData"}

// TestSensitiveChangesLeakNothing: the arguments of a change to an object
// holding secrets are elided in the ledger, and an error echoing a value
// is scrubbed.
func TestSensitiveChangesLeakNothing(t *testing.T) {
	const canary = "c2VjcmV0LWNhbmFyeQ==" // base64 of secret-canary
	_, b, ledger := newChanger(t, policy.Policy{Mode: policy.ModeApply, AllowSecretWrites: true})
	s := b.Session("t")
	run(t, s, `shop.vaults.patch {"name":"v","data":{"key":"`+canary+`"}}`)
	if strings.Contains(ledger.String(), canary) || strings.Contains(ledger.String(), "secret-canary") {
		t.Errorf("ledger leaks the value: %s", ledger)
	}
	e := scrub(&RPCError{Message: `Vault "v" is invalid: data.key: Invalid value: "secret-canary"`}, json.RawMessage(`{"name":"v","data":{"key":"`+canary+`"}}`), kubernetesSecretData)
	if strings.Contains(e.Message, "secret-canary") || !strings.Contains(e.Message, `Vault "v"`) {
		t.Errorf("scrubbed message %q", e.Message)
	}
	// Refused before any preview (read-only), a sensitive operation's
	// arguments are still elided, whatever their shape.
	_, ro, roLedger := newChanger(t, policy.Policy{Mode: policy.ModeReadOnly})
	run(t, ro.Session("t"), `shop.vaults.patch {"name":"v","patch":[{"op":"replace","path":"/data/key","value":"`+canary+`"}],"data":{"name":"`+canary+`"}}`)
	if strings.Contains(roLedger.String(), canary) || !strings.Contains(roLedger.String(), `"path":"/data/key"`) {
		t.Errorf("read-only ledger: %s", roLedger)
	}
	if got := string(elide(json.RawMessage(`[{"op":"add","path":"/data/pw","value":"hunter22"},{"op":"add","path":"/spec/replicas","value":3}]`), kubernetesSecretData)); strings.Contains(got, "hunter22") || !strings.Contains(got, `"value":3`) {
		t.Errorf("elide of a json patch: %s", got)
	}
	// A change of many objects, one of which holds secrets: its values may
	// flow into the Secret under any key, so all are elided.
	_, pb, pbLedger := newChanger(t, policy.Policy{Mode: policy.ModePlan, AllowSecretWrites: true})
	run(t, pb.Session("t"), `shop.bundles.install {"name":"b","values":{"db":{"url":"postgres://u:canary-pw@h"}}}`)
	if strings.Contains(pbLedger.String(), "canary-pw") || !strings.Contains(pbLedger.String(), `"name":"b"`) {
		t.Errorf("ledger of a change holding a Secret among its objects: %s", pbLedger)
	}
	jp := scrub(&RPCError{Message: `bad value "hunter22"`}, json.RawMessage(`[{"op":"add","path":"/data/pw","value":"hunter22"}]`), kubernetesSecretData)
	if strings.Contains(jp.Message, "hunter22") {
		t.Errorf("json patch value kept: %q", jp.Message)
	}
}

// TestElideSecretShapes: the ledger elides a secret-looking value
// whatever shape carries it, and keeps everything else.
func TestElideSecretShapes(t *testing.T) {
	for _, tc := range []struct{ name, args, want string }{
		{"secret-looking key", `{"name":"web","apiToken":"tok-1"}`, `{"apiToken":"[elided]","name":"web"}`},
		{"env entry with a secret-looking name",
			`{"name":"web","patch":{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"API_TOKEN","value":"tok-2"},{"name":"MODE","value":"fast"}]}]}}}}}`,
			`{"name":"web","patch":{"spec":{"template":{"spec":{"containers":[{"env":[{"name":"API_TOKEN","value":"[elided]"},{"name":"MODE","value":"fast"}],"name":"web"}]}}}}}`},
		{"parameter entry", `{"parameters":[{"key":"db.password","value":"pw-3"},{"key":"replicas","value":"2"}]}`,
			`{"parameters":[{"key":"db.password","value":"[elided]"},{"key":"replicas","value":"2"}]}`},
		{"json patch adding an env entry", `{"patch":[{"op":"add","path":"/spec/template/spec/containers/0/env/-","value":{"name":"DB_PASSWORD","value":"pw-4"}}]}`,
			`{"patch":[{"op":"add","path":"/spec/template/spec/containers/0/env/-","value":{"name":"DB_PASSWORD","value":"[elided]"}}]}`},
		{"json patch replacing an env value by index", `{"patch":[{"op":"replace","path":"/spec/template/spec/containers/0/env/3/value","value":"pw-5"}]}`,
			`{"patch":[{"op":"replace","path":"/spec/template/spec/containers/0/env/3/value","value":"[elided]"}]}`},
		{"NAME=value strings", `{"args":["API_TOKEN=tok-6","MODE=fast","--client-secret=cs-7"]}`,
			`{"args":["API_TOKEN=[elided]","MODE=fast","--client-secret=[elided]"]}`},
		{"a flag and its value", `{"command":["app","--password","pw-8","--port","80"]}`,
			`{"command":["app","--password","[elided]","--port","80"]}`},
		{"nothing secret", `{"name":"web","replicas":3,"labels":{"app":"web"}}`, `{"labels":{"app":"web"},"name":"web","replicas":3}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, string(elide(json.RawMessage(tc.args), kubernetesSecretData))); diff != "" {
				t.Errorf("elide (-want +got):\n%s", diff)
			}
			e := scrub(&RPCError{Message: "echo " + tc.args}, json.RawMessage(tc.args), kubernetesSecretData)
			for _, v := range []string{"tok-1", "tok-2", "pw-3", "pw-4", "pw-5", "tok-6", "cs-7", "pw-8"} {
				if strings.Contains(e.Message, v) {
					t.Errorf("error message keeps %s: %s", v, e.Message)
				}
			}
		})
	}
}

// TestWaitForCallsUnderWay: a call still running when the script ends is
// in the ledger once Wait returns.
func TestWaitForCallsUnderWay(t *testing.T) {
	_, b, _ := newChanger(t, policy.Policy{})
	s := b.Session("t")
	release, started := make(chan struct{}), make(chan struct{}, 1)
	slow := &slowProvider{release: release, started: started}
	b.clusters[0].providers = append(b.clusters[0].providers, slow)
	if _, _, err := b.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	go s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow.op","arguments":{}}}`))
	<-started
	if s.Wait(10 * time.Millisecond) {
		t.Fatal("Wait returned with a call under way")
	}
	close(release)
	if !s.Wait(time.Second) || len(s.Ledger()) != 1 {
		t.Errorf("after Wait: %d ledger entries", len(s.Ledger()))
	}
}

// slowProvider's operation says when it started (on started, if not
// nil) and ends when release is closed.
type slowProvider struct{ release, started chan struct{} }

func (p *slowProvider) Discover(context.Context) ([]*catalog.Operation, string, error) {
	return []*catalog.Operation{{Name: "slow.op", Annotations: catalog.Annotations{ReadOnly: true}}}, "s1", nil
}

func (p *slowProvider) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	if p.started != nil {
		p.started <- struct{}{}
	}
	<-p.release
	return json.RawMessage(`1`), nil
}

// TestPlanUsedOnce: the bridge's own record lets a plan be used once,
// however many try at once, and forgets plans once they expired.
func TestPlanUsedOnce(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	b := New(nil, &Options{Now: func() time.Time { return now }})
	p := &Plan{ID: "plan-1", Expires: now.Add(time.Minute)}
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- b.Use(context.Background(), p) }()
	}
	ok := 0
	for range 8 {
		err := <-errs
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "plan plan-1 was already applied"):
			t.Errorf("a second use: %v", err)
		}
	}
	if ok != 1 {
		t.Errorf("used %d times, want 1", ok)
	}
	now = now.Add(2 * time.Minute)
	if err := b.Use(context.Background(), &Plan{ID: "plan-2", Expires: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if n := len(b.uses.(*memoryUses).used); n != 1 {
		t.Errorf("%d plans remembered after plan-1 expired, want 1", n)
	}
}

// where is a record of used plans that only has a name.
type where string

func (w where) Where() string                                        { return string(w) }
func (w where) Use(context.Context, string, time.Time) (bool, error) { return true, nil }

// TestPlanBoundToItsRecord: servers sharing a plan key but recording
// applied plans in different places refuse each other's plans, so that no
// two records let one plan apply twice.
func TestPlanBoundToItsRecord(t *testing.T) {
	key := []byte("a key shared by two deployments")
	a := New(nil, &Options{PlanKey: key, PlanUses: where("https://one:6443/api/v1/namespaces/a/configmaps")})
	b := New(nil, &Options{PlanKey: key, PlanUses: where("https://one:6443/api/v1/namespaces/b/configmaps")})
	p := &Plan{ID: "plan-1", Expires: time.Now().Add(time.Minute), Code: codeHash("c"), Record: "https://one:6443/api/v1/namespaces/a/configmaps"}
	if _, err := a.Open(a.Sign(p), "c"); err != nil {
		t.Errorf("where it was made: %v", err)
	}
	if _, err := b.Open(a.Sign(p), "c"); err == nil || !strings.Contains(err.Error(), "records its use in https://one:6443/api/v1/namespaces/a/configmaps, this server in https://one:6443/api/v1/namespaces/b/configmaps") {
		t.Errorf("elsewhere: %v", err)
	}
}

// TestSecretArgsFromDescriptors: which argument keys hold secret data is
// the operations' knowledge (Annotations.SecretArgs), not the bridge's:
// an operation that declares none keeps a "data" field in its record; one
// that declares it hides it; a call of an unknown name hides what any
// operation declares, since it could be any.
func TestSecretArgsFromDescriptors(t *testing.T) {
	input := &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{"data": {Type: "object"}}}
	p := &fakeProvider{ops: []*catalog.Operation{
		{Name: "plain.things.list", Input: input, Annotations: readOnly},
		{Name: "kubernetes.configmaps.list", Input: input, Annotations: catalog.Annotations{ReadOnly: true, SecretArgs: []string{"data", "stringData"}}},
	}}
	var ledger bytes.Buffer
	b := New([]Provider{p}, &Options{Ledger: &ledger})
	t.Cleanup(func() { _ = b.Close() })
	s := b.Session("t")
	// The unknown name first, before anything loaded the operations.
	run(t, s, `kubernetes.configmapz.list {"data":{"k":"hidden-3"}}`, `plain.things.list {"data":{"k":"visible-1"}}`, `kubernetes.configmaps.list {"data":{"k":"hidden-2"}}`)
	got := ledger.String()
	if !strings.Contains(got, "visible-1") {
		t.Errorf("an operation without SecretArgs lost its data field in the record:\n%s", got)
	}
	for _, v := range []string{"hidden-2", "hidden-3"} {
		if strings.Contains(got, v) {
			t.Errorf("%s recorded:\n%s", v, got)
		}
	}
}

// A provider of no cluster (an upstream MCP server) is judged by the base
// policy whichever cluster a script names elsewhere: a cluster in apply
// mode does not make its changes applied.
func TestSharedProvidersPassTheBasePolicy(t *testing.T) {
	dev, prod := &fakeProvider{ops: []*catalog.Operation{{Name: "kubernetes.pods.list", Input: &catalog.Schema{Type: "object"}, Annotations: readOnly}}}, &fakeProvider{}
	prod.ops = dev.ops
	apply, readOnlyPolicy := policy.Policy{Mode: policy.ModeApply}, policy.Policy{Mode: policy.ModeReadOnly}
	shared := &changer{}
	var ledger bytes.Buffer
	b := New(nil, &Options{Ledger: &ledger, Policy: policy.Policy{Mode: policy.ModePlan}, Shared: []Provider{shared},
		Clusters: []Cluster{{Name: "prod", Providers: []Provider{prod}, Policy: &readOnlyPolicy}, {Name: "dev", Providers: []Provider{dev}, Policy: &apply}}})
	t.Cleanup(func() { _ = b.Close() })
	ops, _, err := b.Operations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.Name == "shop.orders.scale" && op.Input.Properties["context"] != nil {
			t.Errorf("a shared operation takes a context: %+v", op.Input.Properties)
		}
	}
	got := run(t, b.Session("t"), `shop.orders.scale {"name":"a","replicas":2}`, `shop.orders.scale {"name":"a","replicas":2,"context":"dev"}`, `kubernetes.pods.list {"context":"dev"}`)
	if d := cmp.Diff([]string{"", "Invalid", ""}, got); d != "" {
		t.Errorf("reasons (-want +got):\n%s", d)
	}
	if len(shared.applied) != 0 || !strings.Contains(ledger.String(), `"decision":"planned"`) {
		t.Errorf("the shared change was applied (%v), or not planned:\n%s", shared.applied, ledger.String())
	}
}
