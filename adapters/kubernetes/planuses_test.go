package kubernetes

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// TestPlanUsesShared: two replicas sharing a record of used plans in the
// cluster use a plan once between them, however many try at once; records
// of plans long expired are swept.
func TestPlanUsesShared(t *testing.T) {
	ns := cp.Namespace(t)
	one, err := NewPlanUses(cp.Admin, ns)
	if err != nil {
		t.Fatal(err)
	}
	two, _ := NewPlanUses(cp.Admin, ns)
	ctx := context.Background()
	expires := time.Now().Add(time.Hour)
	firsts := make(chan bool, 8)
	for i := range 8 {
		u := []*PlanUses{one, two}[i%2]
		go func() {
			first, err := u.Use(ctx, "plan-0a1b2c", expires)
			if err != nil {
				t.Error(err)
			}
			firsts <- first
		}()
	}
	n := 0
	for range 8 {
		if <-firsts {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the plan was used %d times, want 1", n)
	}
	// A record of a plan that expired long ago goes at the next sweep.
	if first, err := one.Use(ctx, "plan-old", time.Now().Add(-time.Hour)); !first || err != nil {
		t.Fatalf("use of plan-old: %v %v", first, err)
	}
	three, _ := NewPlanUses(cp.Admin, ns)
	if _, err := three.Use(ctx, "plan-new", expires); err != nil {
		t.Fatal(err)
	}
	cs, _ := k8s.NewForConfig(cp.Admin)
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kubecode-plan-old", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the expired plan's record is still there: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kubecode-plan-0a1b2c", metav1.GetOptions{}); err != nil {
		t.Errorf("the live plan's record: %v", err)
	}
}
