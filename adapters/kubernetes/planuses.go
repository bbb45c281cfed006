package kubernetes

import (
	"context"
	"crypto/rand"
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

// PlanUses records which plans were applied as ConfigMaps in one
// namespace of the cluster, written with the server's own identity, so
// that replicas sharing a plan key share the record: creating a plan's
// ConfigMap succeeds once, whichever replica tries first. A record holds
// the plan's id, when it was used and when the plan expires; no value of
// the plan. Records of expired plans are deleted as new ones are made.
type PlanUses struct {
	cs        k8s.Interface
	where     string // the API server and namespace
	namespace string
	now       func() time.Time
	lastSweep atomic.Int64 // Unix nanoseconds
}

// planUseLabel marks the ConfigMaps that record used plans.
const planUseLabel = "kubecode.io/plan-use"

// NewPlanUses returns a record of used plans in namespace, with cfg's
// credentials (the server's own). It does not contact the cluster.
func NewPlanUses(cfg *rest.Config, namespace string) (*PlanUses, error) {
	if namespace == "" {
		return nil, fmt.Errorf("plan uses: name a namespace")
	}
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("plan uses: %w", err)
	}
	return &PlanUses{cs: cs, where: strings.TrimSuffix(cfg.Host, "/") + "/api/v1/namespaces/" + namespace + "/configmaps", namespace: namespace, now: time.Now}, nil
}

// Namespace is the namespace holding the record.
func (u *PlanUses) Namespace() string { return u.namespace }

// Where names the record: the API server and namespace holding it.
func (u *PlanUses) Where() string { return u.where }

// Use records plan id as used; it returns false when it already was.
func (u *PlanUses) Use(ctx context.Context, id string, expires time.Time) (bool, error) {
	u.sweep(ctx)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "kubecode-" + strings.ToLower(id),
			Labels:      map[string]string{planUseLabel: "true", "app.kubernetes.io/managed-by": "kubecode"},
			Annotations: map[string]string{"kubecode.io/expires": expires.UTC().Format(time.RFC3339)},
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

// sweepGrace is how long past its expiry a plan's record is kept: another
// replica's clock may run behind.
const sweepGrace = 10 * time.Minute

// sweep deletes the records of expired plans, at most once a minute.
func (u *PlanUses) sweep(ctx context.Context) {
	now := u.now()
	last := u.lastSweep.Load()
	if now.UnixNano()-last < int64(time.Minute) || !u.lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	list, err := u.cs.CoreV1().ConfigMaps(u.namespace).List(ctx, metav1.ListOptions{LabelSelector: planUseLabel + "=true"})
	if err != nil {
		return // the next use tries again
	}
	for _, cm := range list.Items {
		exp, err := time.Parse(time.RFC3339, cm.Annotations["kubecode.io/expires"])
		if err == nil && now.After(exp.Add(sweepGrace)) {
			_ = u.cs.CoreV1().ConfigMaps(u.namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}})
		}
	}
}
