package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kubecode/kubecode/catalog/secrets"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// The Kubernetes side of the secret boundary: every Secret the server's
// identity can list feeds the registry every result passes (package
// catalog/secrets), kept current by a watch, so a value reaches no script
// whichever read carries it (a pod's logs, a ConfigMap it was copied
// into, a command's output, an upstream's answer).

// secretSource names a Secret's values in the registry: per cluster (its
// API server), so that one cluster's watch never forgets another's.
func secretSource(cluster, ns, name string) string { return secretSources(cluster) + ns + "/" + name }

// secretSources is the prefix of every source of one cluster's Secrets.
func secretSources(cluster string) string { return "Secret of " + cluster + ": " }

// maxWholeValue: a longer value (a bundle, a keystore) is registered line
// by line, not whole in every encoding.
const maxWholeValue = 16 << 10

// SecretValues are the values of s that the boundary hides: every key's
// but those public by convention (publicKey: a certificate, a user name,
// a host). Helm's release records are left to the Helm
// adapter, which masks releases itself. A JSON value (a registry's
// .dockerconfigjson) also gives each string in it.
func SecretValues(s *corev1.Secret) []secrets.Value {
	if s.Type == "helm.sh/release.v1" {
		return nil
	}
	var out []secrets.Value
	for k, v := range s.Data {
		if publicKey(k) {
			continue
		}
		what := fmt.Sprintf("Secret %s/%s key %s", s.Namespace, s.Name, k)
		if len(v) > maxWholeValue {
			for _, l := range strings.Split(string(v), "\n") {
				if len(l) <= maxWholeValue {
					out = append(out, secrets.Value{Value: l, What: what})
				}
			}
			continue
		}
		out = append(out, secrets.Value{Value: string(v), What: what})
		var doc any
		if len(v) > 0 && (v[0] == '{' || v[0] == '[') && json.Unmarshal(v, &doc) == nil {
			jsonStrings(doc, func(x string) { out = append(out, secrets.Value{Value: x, What: what}) })
		}
	}
	return out
}

// publicKey says whether a Secret's key holds, by convention, what is no
// secret: a certificate or public key, or what names and addresses an
// account (kubernetes.io/basic-auth's username, a database's host). Its
// value (postgres, admin, 5432) would hide that word in every answer.
func publicKey(k string) bool {
	switch strings.ToLower(k) {
	case "ca.crt", "tls.crt", "namespace", "username", "user", "login", "email", "host", "hostname", "port", "database", "dbname":
		return true
	}
	return strings.HasSuffix(k, ".pub") || strings.HasSuffix(k, ".crt") && !strings.Contains(k, "key")
}

func jsonStrings(v any, f func(string)) {
	switch t := v.(type) {
	case string:
		f(t)
	case []any:
		for _, x := range t {
			jsonStrings(x, f)
		}
	case map[string]any:
		for k, x := range t {
			if !publicKey(k) {
				jsonStrings(x, f)
			}
		}
	}
}

// SecretWatchOptions configures WatchSecrets. A nil *SecretWatchOptions
// means defaults.
type SecretWatchOptions struct {
	// Log receives the watch's failures (the server may not list
	// Secrets). Nil means slog.Default().
	Log *slog.Logger
}

// SecretWatch keeps a registry current with the values of every Secret
// its identity can list. Close it to stop.
type SecretWatch struct {
	stop   context.CancelFunc
	done   chan struct{}
	synced atomic.Bool
}

// WatchSecrets starts a watch of every Secret of cfg's cluster that feeds
// reg. It lists and watches with cfg's identity (the server's): the
// values serve only to be hidden. Until its first list has arrived, or
// when the identity may not list Secrets, Synced is false and the
// adapter reads a pod's Secrets before its logs or a command's output.
func WatchSecrets(cfg *rest.Config, reg *secrets.Registry, opts *SecretWatchOptions) (*SecretWatch, error) {
	log := slog.Default()
	if opts != nil && opts.Log != nil {
		log = opts.Log
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return credentials{rt, reg} })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: secret watch: %w", err)
	}
	w := &SecretWatch{done: make(chan struct{})}
	probe, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = cs.CoreV1().Secrets(corev1.NamespaceAll).List(probe, metav1.ListOptions{Limit: 1})
	cancel()
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		// Not an error: the adapter reads each pod's Secrets instead.
		log.Warn("secret boundary: the server may not list Secrets, so a pod's Secrets are read before its logs or a command's output; values of Secrets it cannot read are not hidden elsewhere", "err", err)
		close(w.done)
		w.stop = func() {}
		return w, nil
	}
	ctx, stop := context.WithCancel(context.Background())
	w.stop = stop
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "secrets", corev1.NamespaceAll, fields.Everything())
	store := &registryStore{reg: reg, cluster: cfg.Host, synced: &w.synced, log: log}
	r := cache.NewReflectorWithOptions(lw, &corev1.Secret{}, store, cache.ReflectorOptions{Name: "kubecode secret boundary"})
	go func() {
		defer close(w.done)
		r.RunWithContext(ctx)
	}()
	return w, nil
}

// Synced says the registry holds every Secret the watch can list.
func (w *SecretWatch) Synced() bool { return w != nil && w.synced.Load() }

// Close stops the watch and waits for it.
func (w *SecretWatch) Close() error {
	w.stop()
	select {
	case <-w.done:
	case <-time.After(5 * time.Second):
	}
	return nil
}

// registryStore is the watch's store: it keeps no object, only the values
// in the registry.
type registryStore struct {
	reg     *secrets.Registry
	cluster string // its API server
	synced  *atomic.Bool
	log     *slog.Logger
	dropped int64 // the registry's Dropped when last said
}

func (s *registryStore) put(obj any) error {
	if sec, ok := obj.(*corev1.Secret); ok {
		s.reg.Set(secretSource(s.cluster, sec.Namespace, sec.Name), SecretValues(sec))
		if d := s.reg.Dropped(); d > s.dropped {
			s.dropped = d
			s.log.Error("secret boundary: the registry of secret values is full; values of further Secrets are not hidden from reads", "secret", sec.Namespace+"/"+sec.Name, "forms dropped", d)
		}
	}
	return nil
}

func (s *registryStore) Add(obj any) error    { return s.put(obj) }
func (s *registryStore) Update(obj any) error { return s.put(obj) }
func (s *registryStore) Delete(obj any) error {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if sec, ok := obj.(*corev1.Secret); ok {
		s.reg.Forget(secretSource(s.cluster, sec.Namespace, sec.Name))
	}
	return nil
}

func (s *registryStore) Replace(list []any, _ string) error {
	keep := map[string]bool{}
	for _, obj := range list {
		if sec, ok := obj.(*corev1.Secret); ok {
			keep[secretSource(s.cluster, sec.Namespace, sec.Name)] = true
			_ = s.put(sec)
		}
	}
	for _, src := range s.reg.Sources(secretSources(s.cluster)) {
		if !keep[src] {
			s.reg.Forget(src)
		}
	}
	s.synced.Store(true)
	return nil
}

func (s *registryStore) Resync() error { return nil }

// credentials registers the credentials a request carries (a bearer
// token from a kubeconfig, a file an operator rotates, an exec plugin, a
// caller's own; a basic-auth password) as it goes out: a result that
// echoes one (an upstream showing its kubeconfig) loses it at the
// boundary.
type credentials struct {
	rt  http.RoundTripper
	reg *secrets.Registry
}

func (c credentials) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.reg != nil {
		if h := req.Header.Get("Authorization"); h != "" {
			if tok, ok := strings.CutPrefix(h, "Bearer "); ok {
				c.reg.Add("cluster credential "+tokenID(tok), secrets.Value{Value: tok, What: "a cluster credential (bearer token)"})
			} else if _, pw, ok := req.BasicAuth(); ok {
				c.reg.Add("cluster credential "+tokenID(pw), secrets.Value{Value: pw, What: "a cluster credential (password)"})
			}
		}
	}
	return c.rt.RoundTrip(req)
}

// RegisterCredentials registers what cfg itself holds: its bearer token
// (or the file's), its password and its client key. Tokens learnt as
// requests go out (an exec plugin's) are registered by the clients the
// adapter builds.
func RegisterCredentials(cfg *rest.Config, reg *secrets.Registry) {
	if reg == nil || cfg == nil {
		return
	}
	add := func(v, what string) {
		if v != "" {
			reg.Add("cluster credential "+tokenID(v), secrets.Value{Value: v, What: what})
		}
	}
	add(cfg.BearerToken, "a cluster credential (bearer token)")
	if cfg.BearerTokenFile != "" {
		if b, err := readSmallFile(cfg.BearerTokenFile); err == nil {
			add(string(b), "a cluster credential (bearer token)")
		}
	}
	add(cfg.Password, "a cluster credential (password)")
	key := cfg.KeyData
	if len(key) == 0 && cfg.KeyFile != "" {
		key, _ = readSmallFile(cfg.KeyFile)
	}
	add(string(key), "a cluster credential (client key)")
}

// ensurePodSecrets registers the values of every Secret pod references
// before a read that carries what the pod prints (its logs, a command's
// output), unless the watch already holds every Secret. It fails when
// one cannot be read: the output could not be kept clean of it.
func (a *Adapter) ensurePodSecrets(ctx context.Context, pod *corev1.Pod) error {
	if a.watch.Synced() {
		return nil
	}
	values, err := a.podSecretValues(ctx, pod)
	if err != nil {
		return err
	}
	for src, vs := range values {
		a.secrets.Set(src, vs)
	}
	return nil
}

// tokenID names a credential in the registry without holding it.
func tokenID(v string) string {
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:6])
}

// readSmallFile reads a credential file of at most 1 MiB.
func readSmallFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<20))
}
