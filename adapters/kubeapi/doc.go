// Package kubeapi is what the adapters that call the Kubernetes API (the
// Kubernetes adapter, and Helm's, whose releases are Kubernetes objects)
// both know of it, in one place: how a caller's identity travels with a
// request (ActForCallers), which objects hold secret values (IsSecret),
// how a change of an object is classified for the bridge's rules
// (Classify), how a new object reads to whoever approves it
// (CreateSummary), and how two objects differ (Diff: the one diff that
// plans, Helm's drift and its reverts share, with Trim, the fields an
// object's owner sets). It is no adapter: it serves no operation.
package kubeapi
