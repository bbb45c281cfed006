// Package bridge is the one choke point every operation call passes
// through. It holds the adapters (and so the credentials), speaks JSON-RPC
// 2.0, validates arguments against each operation's schema before any API
// call, shapes and redacts results, and records every call in a ledger.
//
// The sandbox never sees an adapter: the broker gives scripts host functions
// that send JSON-RPC requests to a Session.
//
//	b := bridge.New([]bridge.Provider{k8s}, nil)
//	defer b.Close() // stops background refreshes of the operation registry
//	s := b.Session("trace-1")
//	resp := s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call",
//	    "params":{"name":"kubernetes.pods.list","arguments":{"namespace":"shop"}}}`))
package bridge
