package kubernetes

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// PlanUses records which plans were applied as ConfigMaps in one
// namespace of the cluster, written with the server's own identity, so
// that replicas sharing a plan key share the record: creating a plan's
// ConfigMap succeeds once, whichever replica tries first. A record holds
// the plan's id, when it was used and when the plan expires; no value of
// the plan. Records of expired plans are deleted as new ones are made.
type PlanUses struct{ *records }

// planUseLabel marks the ConfigMaps that record used plans.
const planUseLabel = "kubecode.io/plan-use"

// NewPlanUses returns a record of used plans in namespace, with cfg's
// credentials (the server's own). It does not contact the cluster.
func NewPlanUses(cfg *rest.Config, namespace string) (*PlanUses, error) {
	r, err := newRecords(cfg, namespace, "plan uses")
	if err != nil {
		return nil, err
	}
	return &PlanUses{r}, nil
}

// Use records plan id as used; it returns false when it already was.
func (u *PlanUses) Use(ctx context.Context, id string, expires time.Time) (bool, error) {
	u.sweep(ctx, planUseLabel)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "kubecode-" + strings.ToLower(id),
			Labels:      map[string]string{planUseLabel: "true", "app.kubernetes.io/managed-by": "kubecode"},
			Annotations: map[string]string{expiresAnnotation: expires.UTC().Format(time.RFC3339)},
		},
		Data: map[string]string{"plan": id, "usedAt": u.now().UTC().Format(time.RFC3339Nano), "attempt": rand.Text()},
	}
	_, err := u.cs.CoreV1().ConfigMaps(u.namespace).Create(ctx, cm, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return false, nil
	case err != nil:
		// The record may have been made all the same (the answer was
		// lost): it is this attempt's when it holds this attempt's mark.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		got, gerr := u.cs.CoreV1().ConfigMaps(u.namespace).Get(gctx, cm.Name, metav1.GetOptions{})
		if gerr == nil {
			return got.Data["attempt"] == cm.Data["attempt"], nil
		}
		return false, fmt.Errorf("record the plan's use in namespace %s: %w", u.namespace, err)
	}
	return true, nil
}
