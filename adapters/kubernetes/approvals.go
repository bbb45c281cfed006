package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Approvals keeps plans waiting for people, and their decisions, as
// ConfigMaps in one namespace, written with the server's own identity:
// every replica of a stateless deployment sees the same pending plans
// and decisions, and a restart loses none. A record holds the plan's
// signed token and its reading (neither holds a Secret value); records
// are deleted a while after their plan expires.
type Approvals struct{ *records }

// approvalLabel marks the ConfigMaps that hold pending plans.
const approvalLabel = "kubecode.io/approval"

// NewApprovals returns a store of pending plans in namespace, with cfg's
// credentials (the server's own). It does not contact the cluster.
func NewApprovals(cfg *rest.Config, namespace string) (*Approvals, error) {
	r, err := newRecords(cfg, namespace, "approvals")
	if err != nil {
		return nil, err
	}
	return &Approvals{r}, nil
}

func approvalName(id string) string { return "kubecode-approval-" + strings.ToLower(id) }

// Put records a plan waiting for approval.
func (a *Approvals) Put(ctx context.Context, id string, expires time.Time, record []byte) error {
	if !validPlanID(id) {
		return fmt.Errorf("approvals: %q is not a record id", id)
	}
	a.sweep(ctx, approvalLabel)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: approvalName(id),
		Labels:      map[string]string{approvalLabel: "true", "app.kubernetes.io/managed-by": "kubecode"},
		Annotations: map[string]string{expiresAnnotation: expires.UTC().Format(time.RFC3339)}},
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
// "plan-<hex>", an execution's "revert-<trace>", a standard change's
// "std-<hex>", a saved runbook's "rb-<name>"): an id from the agent or
// a URL must not reach another object.
func validPlanID(id string) bool {
	if !strings.HasPrefix(id, "plan-") && !strings.HasPrefix(id, "revert-") && !strings.HasPrefix(id, "std-") && !strings.HasPrefix(id, "rb-") || len(id) > 63-len("kubecode-approval-") {
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
		exp, err := time.Parse(time.RFC3339, cm.Annotations[expiresAnnotation])
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
