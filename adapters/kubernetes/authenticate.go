package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Authenticate asks the API server whom a bearer token is for, and
// returns the caller that acts with it: with passthrough, a caller holding
// the token (its requests carry it; the token authenticates itself with a
// SelfSubjectReview); without, a caller the server's identity impersonates
// (the server checks the token with a TokenReview, which its identity
// needs permission for). With audiences (impersonation only), the token
// must be meant for one of them ("kubecode"), not for the API server: a
// token stolen from kubecode then opens nothing else. A token the API
// server does not accept is an error wrapping catalog.ErrUnauthenticated.
func (a *Adapter) Authenticate(ctx context.Context, token string, passthrough bool, audiences ...string) (*catalog.Caller, error) {
	if passthrough {
		r, err := a.core.AuthenticationV1().SelfSubjectReviews().Create(catalog.WithCaller(ctx, &catalog.Caller{Token: token}),
			&authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if apierrors.IsUnauthorized(err) {
			return nil, fmt.Errorf("%w: the Kubernetes API server does not accept this token", catalog.ErrUnauthenticated)
		}
		if err != nil {
			return nil, fmt.Errorf("kubernetes: who is this token for: %w", err)
		}
		u := r.Status.UserInfo
		return &catalog.Caller{User: u.Username, Groups: u.Groups, Token: token}, nil
	}
	r, err := a.core.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: audiences}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: token review (the server's identity needs create on tokenreviews): %w", err)
	}
	if !r.Status.Authenticated {
		msg := "the Kubernetes API server does not accept this token"
		if r.Status.Error != "" {
			msg += ": " + r.Status.Error
		}
		return nil, fmt.Errorf("%w: %s", catalog.ErrUnauthenticated, msg)
	}
	if len(audiences) > 0 && !slices.ContainsFunc(r.Status.Audiences, func(a string) bool { return slices.Contains(audiences, a) }) {
		return nil, fmt.Errorf("%w: the token is not meant for %s", catalog.ErrUnauthenticated, strings.Join(audiences, " or "))
	}
	u := r.Status.User
	c := &catalog.Caller{User: u.Username, Groups: u.Groups, UID: u.UID}
	for k, v := range u.Extra {
		if c.Extra == nil {
			c.Extra = map[string][]string{}
		}
		c.Extra[k] = v
	}
	return c, nil
}
