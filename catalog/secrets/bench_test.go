package secrets

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"
)

// registry10k is a registry of 10,000 random 24-byte values, as a cluster
// of 10,000 Secrets of one key registers them.
func registry10k(b *testing.B, n int) *Registry {
	r := New(nil)
	for i := range n {
		v := make([]byte, 18)
		_, _ = rand.Read(v)
		r.Set(fmt.Sprintf("Secret ns/s%d", i), []Value{{Value: base64.RawURLEncoding.EncodeToString(v), What: fmt.Sprintf("Secret ns/s%d key k", i)}})
	}
	return r
}

// podList is a pods list of n pods as the bridge hands it over (about
// 2 KB a pod, the demo's shape).
func podList(n int) []byte {
	type pod map[string]any
	var items []pod
	for i := range n {
		items = append(items, pod{"metadata": pod{"name": fmt.Sprintf("web-7d9f8c6b5-%05d", i), "namespace": "shop", "uid": fmt.Sprintf("6f1c2a4e-1b2c-4d5e-8f90-%012d", i),
			"labels": pod{"app": "web", "pod-template-hash": "7d9f8c6b5"}, "creationTimestamp": "2026-11-28T10:00:00Z"},
			"spec": pod{"nodeName": fmt.Sprintf("node-%d", i%50), "containers": []pod{{"name": "web", "image": "nginx:1.27", "resources": pod{"requests": pod{"cpu": "100m", "memory": "128Mi"}},
				"env": []pod{{"name": "MODE", "value": "production"}}, "ports": []pod{{"containerPort": 8080, "protocol": "TCP"}}}}},
			"status": pod{"phase": "Running", "podIP": fmt.Sprintf("10.0.%d.%d", i/250, i%250), "conditions": []pod{{"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}},
				"containerStatuses": []pod{{"name": "web", "ready": true, "restartCount": i % 3, "image": "nginx:1.27", "imageID": "docker.io/library/nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "state": pod{"running": pod{"startedAt": "2026-11-28T10:00:05Z"}}}}}})
	}
	out, _ := json.Marshal(pod{"items": items})
	return out
}

func logMiB() []byte {
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "2026-11-28T10:00:%02d.%03dZ INFO request id=%08x path=/api/v1/orders status=200 took=%dms user=u%d\n", i%60, i%1000, i*7919, i%97, i%31)
	}
	return []byte(b.String())
}

// BenchmarkScrub is the boundary's cost on the two results the secret
// boundary issue names: a 1 MiB log and a 5,000-pod list (about 10 MB),
// with no value registered and with 10,000.
func BenchmarkScrub(b *testing.B) {
	pods, logs := podList(5000), logMiB()
	for _, n := range []int{0, 10000} {
		r := registry10k(b, n)
		b.Run(fmt.Sprintf("pods5000/values%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(pods)))
			for b.Loop() {
				if out, _ := r.ScrubJSON(pods); len(out) != len(pods) {
					b.Fatal("changed")
				}
			}
		})
		b.Run(fmt.Sprintf("log1MiB/values%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(logs)))
			s := string(logs)
			for b.Loop() {
				if out, _ := r.Scrub(s, false); len(out) != len(s) {
					b.Fatal("changed")
				}
			}
		})
	}
}

// BenchmarkRegister is the cost of registering one Secret's value (its
// forms) beside 10,000 others, as a watch does on every update.
func BenchmarkRegister(b *testing.B) {
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	r := registry10k(b, 10000)
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	heap := float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
	i := 0
	for b.Loop() {
		i++
		r.Set("Secret ns/changing", []Value{{Value: fmt.Sprintf("rotating-value-%012d", i), What: "Secret ns/changing key k"}})
	}
	s := r.Stats()
	b.ReportMetric(heap, "heap-MiB")
	b.ReportMetric(float64(s.Bytes)/(1<<20), "form-MiB")
	b.ReportMetric(float64(s.Forms), "forms")
}
