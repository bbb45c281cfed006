package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Approvals keeps plans waiting for people, and their decisions, as
// ConfigMaps in one namespace, written with the server's own identity:
// every replica of a stateless deployment sees the same pending plans
// and decisions, and a restart loses none. A record holds the plan's
// signed token and its reading (neither holds a Secret value); records
// are deleted a while after their plan expires.
type Approvals struct {
	cs        k8s.Interface
	where     string
	namespace string
	now       func() time.Time
	lastSweep atomic.Int64
}

// approvalLabel marks the ConfigMaps that hold pending plans.
const approvalLabel = "kubecode.io/approval"

// NewApprovals returns a store of pending plans in namespace, with cfg's
// credentials (the server's own). It does not contact the cluster.
func NewApprovals(cfg *rest.Config, namespace string) (*Approvals, error) {
	if namespace == "" {
		return nil, fmt.Errorf("approvals: name a namespace")
	}
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	return &Approvals{cs: cs, where: strings.TrimSuffix(cfg.Host, "/") + "/api/v1/namespaces/" + namespace + "/configmaps", namespace: namespace, now: time.Now}, nil
}

// Where names the store: the API server and namespace holding it.
func (a *Approvals) Where() string { return a.where }

func approvalName(id string) string { return "kubecode-approval-" + strings.ToLower(id) }

// Put records a plan waiting for approval.
func (a *Approvals) Put(ctx context.Context, id string, expires time.Time, record []byte) error {
	if !validPlanID(id) {
		return fmt.Errorf("approvals: %q is not a record id", id)
	}
	a.sweep(ctx)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: approvalName(id),
		Labels:      map[string]string{approvalLabel: "true", "app.kubernetes.io/managed-by": "kubecode"},
		Annotations: map[string]string{"kubecode.io/expires": expires.UTC().Format(time.RFC3339)}},
		Data: map[string]string{"plan": string(record)}}
	if _, err := a.cs.CoreV1().ConfigMaps(a.namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("record the plan in namespace %s: %w", a.namespace, err)
	}
	return nil
}

// Get returns plan id's record and its resourceVersion, or a nil record.
func (a *Approvals) Get(ctx context.Context, id string) ([]byte, string, error) {
	if !validPlanID(id) {
		return nil, "", nil
	}
	cm, err := a.cs.CoreV1().ConfigMaps(a.namespace).Get(ctx, approvalName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("namespace %s: %w", a.namespace, err)
	}
	return []byte(cm.Data["plan"]), cm.ResourceVersion, nil
}

// validPlanID says whether id can name a record's ConfigMap (a plan's
// "plan-<hex>", an execution's "revert-<trace>"): an id from the agent or
// a URL must not reach another object.
func validPlanID(id string) bool {
	if !strings.HasPrefix(id, "plan-") && !strings.HasPrefix(id, "revert-") || len(id) > 63-len("kubecode-approval-") {
		return false
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r == '-') {
			return false
		}
	}
	return !strings.HasSuffix(id, "-")
}

// List returns the records of plans not yet expired.
func (a *Approvals) List(ctx context.Context) ([][]byte, error) {
	list, err := a.cs.CoreV1().ConfigMaps(a.namespace).List(ctx, metav1.ListOptions{LabelSelector: approvalLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", a.namespace, err)
	}
	now := a.now()
	var out [][]byte
	for _, cm := range list.Items {
		exp, err := time.Parse(time.RFC3339, cm.Annotations["kubecode.io/expires"])
		if err != nil || now.After(exp) {
			continue
		}
		out = append(out, []byte(cm.Data["plan"]))
	}
	return out, nil
}

// Update replaces plan id's record if its resourceVersion is still
// version: a decision another replica recorded meanwhile makes it false.
func (a *Approvals) Update(ctx context.Context, id, version string, record []byte) (bool, error) {
	cm, err := a.cs.CoreV1().ConfigMaps(a.namespace).Get(ctx, approvalName(id), metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("namespace %s: %w", a.namespace, err)
	}
	if cm.ResourceVersion != version {
		return false, nil
	}
	cm.Data = map[string]string{"plan": string(record)}
	if _, err := a.cs.CoreV1().ConfigMaps(a.namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return false, fmt.Errorf("namespace %s: %w", a.namespace, err)
	}
	return true, nil
}

// sweep deletes the records of long-expired plans, at most once a minute.
func (a *Approvals) sweep(ctx context.Context) {
	now := a.now()
	last := a.lastSweep.Load()
	if now.UnixNano()-last < int64(time.Minute) || !a.lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	list, err := a.cs.CoreV1().ConfigMaps(a.namespace).List(ctx, metav1.ListOptions{LabelSelector: approvalLabel + "=true"})
	if err != nil {
		return
	}
	for _, cm := range list.Items {
		exp, err := time.Parse(time.RFC3339, cm.Annotations["kubecode.io/expires"])
		if err == nil && now.After(exp.Add(sweepGrace)) {
			_ = a.cs.CoreV1().ConfigMaps(a.namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}})
		}
	}
}
