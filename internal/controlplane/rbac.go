package controlplane

import (
	"context"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Identities known to kube-apiserver through its token file.
const (
	// AdminUser is in group system:masters: allowed everything.
	AdminUser = "admin"
	// ViewerUser may get, list and watch pods (and read their logs), events
	// and namespaces, and nothing else: listing secrets is a 403.
	ViewerUser = "viewer"
	// ReviewerGroup is the group of ReviewerUsers: people with no rights
	// in the cluster who approve plans as themselves.
	ReviewerGroup = "kubecode:reviewers"

	viewerRole = "kubecode-viewer"
)

// viewerRules are the permissions of ViewerUser.
var viewerRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods", "pods/log", "events", "namespaces"}, Verbs: []string{"get", "list", "watch"}},
}

// grantViewer creates the ClusterRole and ClusterRoleBinding of ViewerUser
// and waits until the authorizer has seen them.
func grantViewer(ctx context.Context, admin, viewer kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: viewerRole},
		Rules:      viewerRules,
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRole %s: %w", viewerRole, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: viewerRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: viewerRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: ViewerUser}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", viewerRole, err)
	}
	// The RBAC authorizer reads roles from an informer: wait until it allows.
	for {
		_, err := viewer.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		if !apierrors.IsForbidden(err) {
			return fmt.Errorf("viewer list pods: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("viewer role not effective: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ReviewerUsers are two people the cluster authenticates by token
// (ControlPlane.ReviewerTokens), with no rights in it: the demo's way for
// two people to approve a two-person plan, each as themselves.
var ReviewerUsers = []string{"alice", "bob"}
