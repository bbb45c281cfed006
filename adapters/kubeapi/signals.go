package kubeapi

import "github.com/kubecode/kubecode/catalog"

// Signals the Kubernetes and Helm adapters raise on changes
// (catalog.Change.Signals): what a path-aware review calls unsafe. The
// autopsy flags each by name.
const (
	// SignalOwnedPodDelete: a pod deleted that its controller recreates,
	// the shortcut for a restart (rollout.restart rolls them in order).
	SignalOwnedPodDelete = "owned-pod-delete"
	// SignalDuplicate: a new object that does the job of an existing one
	// (a second Service selecting the same pods, a second Deployment of
	// the same pods).
	SignalDuplicate = "duplicate"
	// SignalHealthyRestart: a restart (or rollback, or pod delete) of a
	// workload whose pods were all ready and up to date.
	SignalHealthyRestart = "healthy-restart"
	// SignalScaleToZero: a workload scaled to no pods.
	SignalScaleToZero = "scale-to-zero"
)

// Signals are the signals above with what each flag means, as the
// adapters declare them (bridge.Signaler).
var Signals = []catalog.SignalKind{
	{Name: SignalOwnedPodDelete, Meaning: "a pod deleted that its controller recreates: a restart by the shortcut (rollout.restart rolls pods in order)"},
	{Name: SignalDuplicate, Meaning: "a new object that does the job of an existing one (a second Service or Deployment of the same pods)"},
	{Name: SignalHealthyRestart, Meaning: "a restart, rollback or pod delete of a workload whose pods were all ready and up to date"},
	{Name: SignalScaleToZero, Meaning: "a workload scaled to no pods: it serves nothing"},
}
