// Package policy is the one set of rules every change passes, whatever
// the script and whichever provider, as a reviewer reads it rule by rule:
// the modes (read-only, plan, apply), who approves plans, and each rule
// that refuses a change (Judge), named as refusals and ledger decisions
// name it. It judges catalog.Change descriptions, which the adapters fill;
// the bridge applies it to every call that changes something.
package policy
