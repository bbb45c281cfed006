package catalog

import (
	"context"
	"errors"
)

// callIDKey carries the identity of one operation call in a context.
type callIDKey struct{}

// WithCallID returns ctx carrying id, the identity of the operation call
// it serves: whoever dispatches calls (the bridge) names each, and a
// provider passes the name on to the system it calls (Kubernetes: the
// Audit-ID header), so that the system's own records line up with the
// caller's.
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// CallID returns the call identity ctx carries, or "".
func CallID(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// Caller is whom a call is made for when it is not the server itself: a
// person or service that reached the server with credentials of its own.
// Whoever dispatches calls (the bridge) passes it to providers in the
// call's context, and providers make the call with the caller's identity,
// so that the system called (Kubernetes: its RBAC) decides what the caller
// may do.
//
// Token is a credential: it never reaches scripts or records, which name
// only User.
type Caller struct {
	// User and Groups are the caller's identity, as the system called knows
	// it ("system:serviceaccount:team-a:alice").
	User   string
	Groups []string
	// UID and Extra complete the identity the system knows (a token's
	// scopes, say), impersonated along with User.
	UID   string
	Extra map[string][]string
	// Token, when set, is the caller's own bearer token: calls pass it
	// through instead of the server's credentials. When empty, calls carry
	// the server's credentials and impersonate User and Groups.
	Token string
}

// callerKey carries a *Caller in a context.
type callerKey struct{}

// WithCaller returns ctx carrying c, whom the calls made with ctx are for.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller ctx carries, or nil: the server itself.
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// ErrUnauthenticated is the class of errors of credentials the system
// called does not accept.
var ErrUnauthenticated = errors.New("unauthenticated")

// operationKey carries the *Operation a call was resolved to.
type operationKey struct{}

// WithOperation returns ctx carrying op, the operation the bridge resolved
// a call to and judged it by.
func WithOperation(ctx context.Context, op *Operation) context.Context {
	return context.WithValue(ctx, operationKey{}, op)
}

// OperationFrom returns the operation ctx's call was resolved to, or nil.
func OperationFrom(ctx context.Context) *Operation {
	op, _ := ctx.Value(operationKey{}).(*Operation)
	return op
}
