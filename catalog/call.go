package catalog

import "context"

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
