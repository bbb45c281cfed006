package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// records are the ConfigMaps kubecode keeps in one namespace with the
// server's own identity (PlanUses, Approvals), each annotated with when
// it may go, and swept a while after.
type records struct {
	cs        k8s.Interface
	where     string // the API server and namespace
	namespace string
	now       func() time.Time
	lastSweep atomic.Int64 // Unix nanoseconds
}

// newRecords returns the records of namespace, with cfg's credentials;
// what names them in errors. It does not contact the cluster.
func newRecords(cfg *rest.Config, namespace, what string) (*records, error) {
	if namespace == "" {
		return nil, fmt.Errorf("%s: name a namespace", what)
	}
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &records{cs: cs, where: strings.TrimSuffix(cfg.Host, "/") + "/api/v1/namespaces/" + namespace + "/configmaps", namespace: namespace, now: time.Now}, nil
}

// Where names the records: the API server and namespace holding them.
func (r *records) Where() string { return r.where }

// Namespace is the namespace holding the records.
func (r *records) Namespace() string { return r.namespace }

// expiresAnnotation says when a record may go.
const expiresAnnotation = "kubecode.io/expires"

// sweepGrace is how long past its expiry a record is kept: another
// replica's clock may run behind.
const sweepGrace = 10 * time.Minute

// sweep deletes the records labelled label whose time is past, at most
// once a minute.
func (r *records) sweep(ctx context.Context, label string) {
	now := r.now()
	last := r.lastSweep.Load()
	if now.UnixNano()-last < int64(time.Minute) || !r.lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	list, err := r.cs.CoreV1().ConfigMaps(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: label + "=true"})
	if err != nil {
		return // the next write tries again
	}
	for _, cm := range list.Items {
		exp, err := time.Parse(time.RFC3339, cm.Annotations[expiresAnnotation])
		if err == nil && now.After(exp.Add(sweepGrace)) {
			_ = r.cs.CoreV1().ConfigMaps(r.namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}})
		}
	}
}
