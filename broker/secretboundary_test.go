package broker_test

// (This file sorts after broker_test.go: the whole-cluster examples there
// run before its namespaces, whose Services lose their pods while they are
// deleted.)

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/catalog/secrets"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// newBrokerWatched wires a broker as cmd/kubecode does: one registry fed
// by a watch of every Secret, the adapter's credentials, and the bridge's
// boundary over every result.
func newBrokerWatched(t *testing.T, pol policy.Policy) (*broker.Broker, *bytes.Buffer) {
	t.Helper()
	reg := secrets.New(nil)
	watch, err := kubernetes.WatchSecrets(cp.Admin, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = watch.Close() })
	for deadline := time.Now().Add(30 * time.Second); !watch.Synced(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the Secret watch never synced")
		}
	}
	a, err := kubernetes.New(cp.Admin, &kubernetes.Options{Secrets: reg, SecretWatch: watch})
	if err != nil {
		t.Fatal(err)
	}
	var ledger bytes.Buffer
	br := bridge.New([]bridge.Provider{a}, &bridge.Options{Policy: pol, Ledger: &ledger, Secrets: reg})
	t.Cleanup(func() { _ = br.Close() })
	return broker.New(br, &broker.Options{Logger: slog.New(slog.DiscardHandler)}), &ledger
}

// TestSecretBoundary (the red-team's X3, and every path without a guard
// of its own): a pod that prints its password in its logs, a ConfigMap a
// value was copied into (whole, in a URL, in base64), and the cluster
// credential kubecode holds: none reaches the script, the answer or the
// ledger, while the adapter alone returns them (the attack is real).
func TestSecretBoundary(t *testing.T) {
	const canary = "Canary-db-pass-9f2c71ab"
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	ctx := context.Background()
	b64 := base64.StdEncoding.EncodeToString([]byte(canary))
	for _, err := range []error{
		create(cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": canary}}, metav1.CreateOptions{})),
		create(cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "copied"}, Data: map[string]string{
			"url": "postgres://app:" + canary + "@db:5432/shop", "b64": b64, "token": cp.Admin.BearerToken}}, metav1.CreateOptions{})),
		create(cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "talker"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sh", "-c", `echo "starting with db password $DBPASS"; sleep 3600`},
				Env: []corev1.EnvVar{{Name: "DBPASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}}}}}, metav1.CreateOptions{})),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The attack: the adapter alone returns the value in the pod's logs.
	plain, err := kubernetes.New(cp.Admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := plain.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, err := plain.Call(ctx, "kubernetes.pods.logs", json.RawMessage(`{"namespace":"`+ns+`","name":"talker"}`))
		if err == nil && strings.Contains(string(out), canary) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod never logged its password, so the test proves nothing: %s %v", out, err)
		}
	}

	b, ledger := newBrokerWatched(t, policy.Policy{})
	var got struct {
		Logs    string            `json:"logs"`
		Config  map[string]string `json:"config"`
		Decoded string            `json:"decoded"`
	}
	execJSON(t, connect(t, b), `
const logs = await tools.kubernetes.pods.logs({ namespace: '`+ns+`', name: 'talker' })
const cm = await tools.kubernetes.configmaps.get({ namespace: '`+ns+`', name: 'copied' })
return { logs, config: cm.data, decoded: cm.data.b64 }`, &got)
	all := got.Logs + strings.Join([]string{got.Config["url"], got.Config["b64"], got.Config["token"], got.Decoded}, " ") + ledger.String()
	for _, leak := range []string{canary, b64, cp.Admin.BearerToken} {
		if strings.Contains(all, leak) {
			t.Fatalf("a secret value reached the script or the ledger (%q):\n%s", leak[:6], all)
		}
	}
	marker := "[hidden: Secret " + ns + "/db key password]"
	if got.Logs != "starting with db password "+marker+"\n" || got.Config["url"] != "postgres://app:"+marker+"@db:5432/shop" ||
		got.Config["b64"] != "[hidden: Secret "+ns+"/db key password (base64)]" || got.Config["token"] != "[hidden: a cluster credential (bearer token)]" {
		t.Errorf("what the script saw: %+v", got)
	}
	if !strings.Contains(ledger.String(), `"hidden":["Secret `+ns+`/db key password"]`) {
		t.Errorf("the ledger does not say what was hidden:\n%s", ledger)
	}

	// A plan shows what a change replaces, whole: the value copied into
	// the ConfigMap is hidden in its text, its structured changes and the
	// ledger, at the same boundary.
	text, _, sc := execute(t, connect(t, b), map[string]any{"code": `await tools.kubernetes.configmaps.patch({ namespace: '` + ns + `', name: 'copied', patch: { data: { url: 'postgres://app@db:5432/shop' } } })
return 'planned'`})
	planned, _ := json.Marshal(sc)
	for _, leak := range []string{canary, b64} {
		if strings.Contains(text+string(planned)+ledger.String(), leak) {
			t.Fatalf("a secret value reached the plan or the ledger (%q):\n%s", leak[:6], text)
		}
	}
	if !strings.Contains(text, `data.url: "postgres://app:`+marker+`@db:5432/shop" → "postgres://app@db:5432/shop"`) {
		t.Errorf("the plan does not say what the patch replaces:\n%s", text)
	}

	// A Secret created after the watch started is known at once; one
	// deleted is forgotten.
	const later = "Later-canary-31d0c9e4"
	if err := create(cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "later"}, StringData: map[string]string{"key": later}}, metav1.CreateOptions{})); err != nil {
		t.Fatal(err)
	}
	if err := create(cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later"}, Data: map[string]string{"v": later}}, metav1.CreateOptions{})); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		var v string
		execJSON(t, connect(t, b), `return (await tools.kubernetes.configmaps.get({ namespace: '`+ns+`', name: 'later' })).data.v`, &v)
		return v
	}
	for deadline := time.Now().Add(10 * time.Second); read() != "[hidden: Secret "+ns+"/later key key]"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a new Secret's value was never hidden")
		}
	}
	if err := cs.CoreV1().Secrets(ns).Delete(ctx, "later", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); read() != later; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a deleted Secret's value is still hidden")
		}
	}
}

// TestExecReadsNeverComputeOnSecrets (the red-team's X1): with grep listed
// as a read, the three ways to recover a mounted Secret through grep (one
// character a line, in halves, a yes/no oracle on guesses) are planned
// for a person, never run; the environment and a process's environ are
// planned in any container; grep in a container that holds no Secret is
// still a read.
func TestExecReadsNeverComputeOnSecrets(t *testing.T) {
	ns := execPods(t)
	b, ledger := newBrokerPolicy(t, cp.Admin, policy.Policy{ExecReads: [][]string{{"grep", "*"}, {"cat", "*"}, {"printenv", "*"}}})
	for _, tc := range []struct{ pod, argv, warn string }{
		{"client", `['grep', '-o', '.', '/etc/creds/password']`, "⚠ the command names /etc/creds, where volume creds (Secret values) is mounted"},
		{"client", `['grep', '-oE', '^.{16}', '/etc/creds/password']`, "⚠ the command names /etc/creds"},
		{"client", `['grep', '-c', '^h', '/etc/creds/password']`, "⚠ the command names /etc/creds"},
		{"client", `['sh', '-c', 'grep -c ^h /etc/cr""eds/pass*']`, "⚠ runs a shell (sh)"},
		{"client", `['grep', '-c', 'listen', '/etc/site/app.conf']`, "⚠ container shell mounts Secret creds at /etc/creds"},
		{"reader", `['printenv']`, "⚠ the command prints the environment"},
		{"reader", `['cat', '/proc/1/environ']`, "⚠ the command names a process's environment (/proc/1/environ)"},
		{"reader", `['cat', '/var/run/secrets/kubernetes.io/serviceaccount/token']`, "⚠ the command names /var/run/secrets/kubernetes.io/serviceaccount/token"},
	} {
		text, _, sc := execute(t, connect(t, b), map[string]any{"code": `return await tools.kubernetes.pods.exec({ namespace: '` + ns + `', name: '` + tc.pod + `', command: ` + tc.argv + ` })`})
		if planID(t, sc) == "" || !strings.Contains(text, tc.warn) || strings.Contains(text, "hunter2") {
			t.Errorf("%s %s was not planned with %q:\n%s", tc.pod, tc.argv, tc.warn, text)
		}
	}
	if strings.Contains(ledger.String(), `"decision":"read"`) {
		t.Errorf("a command that can compute on a Secret ran as a read:\n%s", ledger)
	}
	var n string
	execJSON(t, connect(t, b), `return (await tools.kubernetes.pods.exec({ namespace: '`+ns+`', name: 'reader', command: ['grep', '-c', 'listen', '/etc/site/app.conf'] })).stdout`, &n)
	if n != "1\n" || !strings.Contains(ledger.String(), `"decision":"read","rule":"execReads"`) {
		t.Errorf("grep in a container without a Secret: %q\n%s", n, ledger)
	}
}
