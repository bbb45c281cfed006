package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"github.com/kubecode/kubecode/catalog"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
)

// pods.evict and nodes.drain, the way kubectl does them: an eviction goes
// through the Eviction API, which honours PodDisruptionBudgets (a budget
// that allows no disruption now makes it wait); a drain cordons the node,
// then evicts its pods, retrying those a budget holds, until they are
// gone or its timeout passes. Both are changes; a drain touches a node,
// so the policy refuses it unless critical changes are allowed, and says
// to hand it to a person.

// Drain bounds, as kubectl drain's defaults would be for a script.
const (
	defaultDrainTTL = 2 * time.Minute
	maxDrainTTL     = 10 * time.Minute
	evictRetry      = 5 * time.Second
	mirrorPod       = "kubernetes.io/config.mirror"
)

type evictArgs struct {
	Namespace          string `json:"namespace"`
	Name               string `json:"name"`
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds"`
}

func describeEvict(op *catalog.Operation) {
	op.Description = "Evict a pod through the Eviction API, as kubectl drain does for each pod: PodDisruptionBudgets are honoured (one that allows no disruption now refuses it); its controller, if any, makes a new pod." + gated
	op.Input = &catalog.Schema{Type: "object", Required: []string{"name"}, Properties: map[string]*catalog.Schema{
		"name":               prop("string", "the pod"),
		"namespace":          prop("string", "defaults to the context's namespace"),
		"gracePeriodSeconds": {Type: "integer", Description: "the pod's termination grace period instead of its own", Minimum: ptr(1.0)},
	}}
	op.Output = &catalog.Schema{Type: "object", Required: []string{"namespace", "name"}, Properties: map[string]*catalog.Schema{
		"namespace": prop("string", ""), "name": prop("string", ""),
		"replacedBy": prop("string", "the controller that makes a new pod (ReplicaSet shop/web-7d9f), absent when none"),
	}}
	op.OutputName = "Eviction"
	op.Keywords = append(op.Keywords, "evict", "eviction", "disruption budget", "move a pod off a node")
	op.Annotations = catalog.Annotations{Destructive: true}
}

type drainArgs struct {
	Name               string  `json:"name"`
	IgnoreDaemonSets   *bool   `json:"ignoreDaemonSets"`
	DeleteEmptyDirData bool    `json:"deleteEmptyDirData"`
	Force              bool    `json:"force"`
	GracePeriodSeconds *int64  `json:"gracePeriodSeconds"`
	Timeout            float64 `json:"timeout"`
}

func describeDrain(op *catalog.Operation) {
	op.Description = "Drain a node as kubectl drain does: cordon it, then evict its pods through the Eviction API (PodDisruptionBudgets honoured, blocked evictions retried) until they are gone or the timeout passes. DaemonSet pods stay; pods no controller owns, or with emptyDir data, are refused unless force / deleteEmptyDirData. A change to a node: the policy refuses it unless critical changes are allowed — hand it to a person."
	op.Input = &catalog.Schema{Type: "object", Required: []string{"name"}, Properties: map[string]*catalog.Schema{
		"name":               prop("string", "the node"),
		"ignoreDaemonSets":   prop("boolean", "leave DaemonSet pods (default true, as they would come back)"),
		"deleteEmptyDirData": prop("boolean", "evict pods whose emptyDir volumes lose their data"),
		"force":              prop("boolean", "evict pods no controller owns: they are gone for good"),
		"gracePeriodSeconds": {Type: "integer", Description: "each pod's termination grace period instead of its own", Minimum: ptr(1.0)},
		"timeout":            prop("number", "seconds to wait for the pods to go (default 120, at most 600)"),
	}}
	op.Output = &catalog.Schema{Type: "object", Required: []string{"node", "cordoned", "evicted", "remaining", "complete"}, Properties: map[string]*catalog.Schema{
		"node":      prop("string", ""),
		"cordoned":  prop("boolean", ""),
		"evicted":   {Type: "array", Items: prop("string", "namespace/name"), Description: "pods evicted and gone"},
		"skipped":   {Type: "array", Items: prop("string", "namespace/name: why"), Description: "pods left on the node (DaemonSet, mirror)"},
		"remaining": {Type: "array", Items: prop("string", "namespace/name: why"), Description: "pods still there when the timeout passed"},
		"complete":  prop("boolean", "every pod to evict is gone"),
	}}
	op.OutputName = "DrainResult"
	op.Keywords = append(op.Keywords, "drain", "drain a node", "cordon", "maintenance", "evict all pods", "kubectl drain")
	op.Annotations = catalog.Annotations{Destructive: true}
}

// eviction is the Eviction of one pod.
func eviction(ns, name string, grace *int64, dry bool) *policyv1.Eviction {
	e := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: grace}}
	if dry {
		e.DeleteOptions.DryRun = []string{metav1.DryRunAll}
	}
	return e
}

// evictionError says why the API server refused an eviction.
func evictionError(ns, name string, err error) error {
	if apierrors.IsTooManyRequests(err) {
		return &catalog.CallError{Status: http.StatusTooManyRequests, Reason: "TooManyRequests",
			Message: fmt.Sprintf("pod %s/%s cannot be evicted now: %s; wait until its PodDisruptionBudget allows a disruption (more pods ready), or scale the workload up first", ns, name, apierrors.ReasonForError(err))}
	}
	return wrapError(err)
}

func (a *Adapter) decodeEvict(raw json.RawMessage) (evictArgs, error) {
	var args evictArgs
	if err := decodeArgs(raw, &args); err != nil {
		return args, err
	}
	if args.Namespace == "" {
		args.Namespace = a.ns
	}
	if args.Name == "" {
		return args, badRequest(`pods.evict needs name: tools.kubernetes.pods.evict({ namespace: "shop", name: "web-7d9f-abcde" })`)
	}
	return args, nil
}

// replacement names the controller that makes a new pod for pod, or "".
func replacement(pod *corev1.Pod) string {
	if c := metav1.GetControllerOf(pod); c != nil && c.Kind != "Node" {
		return c.Kind + " " + pod.Namespace + "/" + c.Name
	}
	return ""
}

// finished says whether pod has run to its end (a Job's completed pod):
// evicting it stops nothing, and no controller makes it again.
func finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// afterEviction says what the cluster does once pod is evicted, as its
// controller really behaves: a finished pod is only removed; a Job starts
// another while its backoffLimit allows; a ReplicaSet, StatefulSet or
// another controller makes a new one; without one it is gone for good.
func afterEviction(pod *corev1.Pod) string {
	r := replacement(pod)
	switch {
	case finished(pod):
		return "finished: it is only removed, nothing runs again"
	case r == "":
		return "no controller owns it: gone for good"
	case strings.HasPrefix(r, "Job "):
		return r + " starts another while its backoffLimit allows"
	case strings.HasPrefix(r, "ReplicaSet "), strings.HasPrefix(r, "StatefulSet "), strings.HasPrefix(r, "ReplicationController "), strings.HasPrefix(r, "DaemonSet "):
		return r + " makes a new one"
	}
	return r + " (its controller) may make a new one"
}

func (a *Adapter) previewEvict(ctx context.Context, raw json.RawMessage) (*catalog.Change, json.RawMessage, error) {
	args, err := a.decodeEvict(raw)
	if err != nil {
		return nil, nil, err
	}
	pod, err := a.core.CoreV1().Pods(args.Namespace).Get(ctx, args.Name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, wrapError(err)
	}
	if err := a.core.CoreV1().Pods(args.Namespace).EvictV1(ctx, eviction(args.Namespace, args.Name, args.GracePeriodSeconds, true)); err != nil {
		return nil, nil, evictionError(args.Namespace, args.Name, err)
	}
	c := &catalog.Change{Action: "evict", Kind: "Pod", Namespace: args.Namespace, Name: args.Name, Existed: true,
		Fingerprint: string(pod.UID), // a pod recreated under the name is another
		Validated:   "the Eviction API's dry run: no PodDisruptionBudget refuses it now",
		Pods:        catalog.Pods{Stopped: 1}}
	c.Diff = []string{fmt.Sprintf("evicts pod %s/%s from node %s", args.Namespace, args.Name, pod.Spec.NodeName)}
	switch r := replacement(pod); {
	case finished(pod):
		c.Pods, c.Impact = catalog.Pods{}, fmt.Sprintf("removes pod %s/%s, which has finished: nothing stops, nothing runs again", args.Namespace, args.Name)
	case r != "":
		c.Impact = fmt.Sprintf("stops pod %s/%s; %s", args.Namespace, args.Name, afterEviction(pod))
	default:
		c.Impact = fmt.Sprintf("stops pod %s/%s for good: no controller owns it", args.Namespace, args.Name)
	}
	if args.GracePeriodSeconds != nil {
		c.GraceSeconds = args.GracePeriodSeconds
	}
	c.Critical = kubeapi.Critical(c, "")
	out, err := json.Marshal(map[string]string{"namespace": args.Namespace, "name": args.Name, "replacedBy": replacement(pod)})
	return c, out, err
}

func (a *Adapter) evict(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	args, err := a.decodeEvict(raw)
	if err != nil {
		return nil, err
	}
	pod, err := a.core.CoreV1().Pods(args.Namespace).Get(ctx, args.Name, metav1.GetOptions{})
	if err != nil {
		return nil, wrapError(err)
	}
	if err := a.core.CoreV1().Pods(args.Namespace).EvictV1(ctx, eviction(args.Namespace, args.Name, args.GracePeriodSeconds, false)); err != nil {
		return nil, evictionError(args.Namespace, args.Name, err)
	}
	out := map[string]string{"namespace": args.Namespace, "name": args.Name}
	if r := replacement(pod); r != "" {
		out["replacedBy"] = r
	}
	return json.Marshal(out)
}

// drainPlan is what a drain does: the pods it evicts and those it leaves,
// or why it cannot.
type drainPlan struct {
	node    *corev1.Node
	evict   []corev1.Pod
	skipped []string
	ttl     time.Duration
}

func (a *Adapter) planDrain(ctx context.Context, raw json.RawMessage) (drainArgs, *drainPlan, error) {
	var args drainArgs
	if err := decodeArgs(raw, &args); err != nil {
		return args, nil, err
	}
	if args.Name == "" {
		return args, nil, badRequest(`nodes.drain needs name: tools.kubernetes.nodes.drain({ name: "node-1" })`)
	}
	p := &drainPlan{ttl: defaultDrainTTL}
	if args.Timeout < 0 || args.Timeout > maxDrainTTL.Seconds() {
		return args, nil, badRequest("timeout is %v: give seconds, at most %d", args.Timeout, int(maxDrainTTL.Seconds()))
	}
	if args.Timeout > 0 {
		p.ttl = time.Duration(args.Timeout * float64(time.Second))
	}
	var err error
	if p.node, err = a.core.CoreV1().Nodes().Get(ctx, args.Name, metav1.GetOptions{}); err != nil {
		return args, nil, wrapError(err)
	}
	pods, err := a.core.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", args.Name).String()})
	if err != nil {
		return args, nil, wrapError(err)
	}
	ignoreDS := args.IgnoreDaemonSets == nil || *args.IgnoreDaemonSets
	var refused []string
	for _, pod := range pods.Items {
		id := pod.Namespace + "/" + pod.Name
		ctrl := metav1.GetControllerOf(&pod)
		switch {
		case pod.Annotations[mirrorPod] != "":
			p.skipped = append(p.skipped, id+": a static (mirror) pod")
			continue
		case pod.DeletionTimestamp != nil:
			continue
		case ctrl != nil && ctrl.Kind == "DaemonSet":
			if ignoreDS {
				p.skipped = append(p.skipped, id+": DaemonSet "+ctrl.Name)
				continue
			}
			refused = append(refused, id+" belongs to DaemonSet "+ctrl.Name+" (ignoreDaemonSets: true leaves it)")
			continue
		case ctrl == nil && !args.Force && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			refused = append(refused, id+" has no controller: evicted, it is gone for good (force: true evicts it anyway)")
			continue
		}
		if !args.DeleteEmptyDirData && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			if v := emptyDir(&pod); v != "" {
				refused = append(refused, id+" keeps data in emptyDir volume "+v+", lost with it (deleteEmptyDirData: true evicts it anyway)")
				continue
			}
		}
		p.evict = append(p.evict, pod)
	}
	if len(refused) > 0 {
		return args, nil, &catalog.CallError{Status: http.StatusBadRequest, Reason: "BadRequest", Message: "cannot drain node " + args.Name + ": " + strings.Join(refused, "; ")}
	}
	return args, p, nil
}

func emptyDir(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil {
			return v.Name
		}
	}
	return ""
}

// drainCritical is why a drain is refused unless critical changes are
// allowed, and what to do instead.
func drainCritical(node string) string {
	return fmt.Sprintf("draining moves every pod off node %s; hand it to a person (kubectl drain %s --ignore-daemonsets) or have an operator allow critical changes", node, node)
}

func (a *Adapter) previewDrain(ctx context.Context, raw json.RawMessage) (*catalog.Change, json.RawMessage, error) {
	args, p, err := a.planDrain(ctx, raw)
	if err != nil {
		return nil, nil, err
	}
	uids := []string{string(p.node.UID)}
	for _, pod := range p.evict {
		uids = append(uids, string(pod.UID))
	}
	slices.Sort(uids[1:])
	sum := sha256.Sum256([]byte(strings.Join(uids, ",")))
	c := &catalog.Change{Action: "drain", Kind: "Node", Name: args.Name, Existed: true,
		// The plan binds the pods it evicts: a pod scheduled there since
		// is one the reviewer did not see, and the re-run diverges.
		Fingerprint: hex.EncodeToString(sum[:8]),
		Critical:    drainCritical(args.Name),
		Validated:   "the cordon's and each eviction's dry run",
	}
	running := 0
	for i := range p.evict {
		if !finished(&p.evict[i]) {
			running++
		}
	}
	c.Pods = catalog.Pods{Stopped: int64(running)}
	if _, err := a.core.CoreV1().Nodes().Patch(ctx, args.Name, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		return c, nil, wrapError(err)
	}
	if p.node.Spec.Unschedulable {
		c.Diff = append(c.Diff, "the node is cordoned already")
	} else {
		c.Diff = append(c.Diff, "cordons the node: spec.unschedulable: false → true")
	}
	var evicted []string
	for _, pod := range p.evict {
		evicted = append(evicted, pod.Namespace+"/"+pod.Name+" ("+afterEviction(&pod)+")")
		if err := a.core.CoreV1().Pods(pod.Namespace).EvictV1(ctx, eviction(pod.Namespace, pod.Name, args.GracePeriodSeconds, true)); err != nil {
			if !apierrors.IsTooManyRequests(err) {
				return c, nil, evictionError(pod.Namespace, pod.Name, err)
			}
			c.Diff = append(c.Diff, fmt.Sprintf("⚠ pod %s/%s: a PodDisruptionBudget allows no disruption now; the drain retries it until %s pass", pod.Namespace, pod.Name, p.ttl))
		}
	}
	c.Impact = fmt.Sprintf("stops %d pods on node %s", running, args.Name)
	if done := len(p.evict) - running; done > 0 {
		c.Impact += fmt.Sprintf(" and removes %d %s", done, plural("finished pod", done))
	}
	if len(evicted) > 0 {
		c.Diff = append(c.Diff, fmt.Sprintf("evicts %d pods: %s", len(evicted), strings.Join(evicted, ", ")))
	}
	if len(p.skipped) > 0 {
		c.Diff = append(c.Diff, fmt.Sprintf("leaves %d pods: %s", len(p.skipped), strings.Join(p.skipped, ", ")))
	}
	out, err := json.Marshal(map[string]any{"node": args.Name, "cordoned": false, "evicted": []string{}, "remaining": []string{}, "complete": false})
	return c, out, err
}

func (a *Adapter) drain(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	args, p, err := a.planDrain(ctx, raw)
	if err != nil {
		return nil, err
	}
	if !p.node.Spec.Unschedulable {
		if _, err := a.core.CoreV1().Nodes().Patch(ctx, args.Name, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return nil, wrapError(err)
		}
	}
	res := struct {
		Node      string   `json:"node"`
		Cordoned  bool     `json:"cordoned"`
		Evicted   []string `json:"evicted"`
		Skipped   []string `json:"skipped,omitempty"`
		Remaining []string `json:"remaining"`
		Complete  bool     `json:"complete"`
	}{Node: args.Name, Cordoned: true, Evicted: []string{}, Skipped: p.skipped, Remaining: []string{}}
	deadline := time.Now().Add(p.ttl)
	pending := map[string]corev1.Pod{}
	why := map[string]string{}
	for _, pod := range p.evict {
		pending[pod.Namespace+"/"+pod.Name] = pod
	}
	requested := map[string]bool{}
	for len(pending) > 0 && time.Now().Before(deadline) {
		for id, pod := range pending {
			if !requested[id] {
				err := a.core.CoreV1().Pods(pod.Namespace).EvictV1(ctx, eviction(pod.Namespace, pod.Name, args.GracePeriodSeconds, false))
				switch {
				case err == nil, apierrors.IsNotFound(err):
					requested[id] = true
				case apierrors.IsTooManyRequests(err):
					why[id] = "a PodDisruptionBudget allows no disruption"
					continue
				default:
					return nil, drainError(res.Evicted, evictionError(pod.Namespace, pod.Name, err))
				}
			}
			live, err := a.core.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err), err == nil && live.UID != pod.UID:
				delete(pending, id)
				res.Evicted = append(res.Evicted, id)
			case err != nil:
				return nil, drainError(res.Evicted, wrapError(err))
			default:
				why[id] = "evicted, still terminating"
			}
		}
		if len(pending) == 0 {
			break
		}
		wait := time.Second // evicted pods terminating
		for id := range pending {
			if !requested[id] {
				wait = evictRetry // a budget holds one: retry as kubectl does
			}
		}
		select {
		case <-ctx.Done():
			return nil, drainError(res.Evicted, ctx.Err())
		case <-time.After(min(wait, time.Until(deadline)+10*time.Millisecond)):
		}
	}
	for id := range pending {
		res.Remaining = append(res.Remaining, id+": "+why[id])
	}
	res.Complete = len(pending) == 0
	return json.Marshal(res)
}

// drainError says what a drain did before it failed: the node stays
// cordoned, and these pods were evicted.
func drainError(evicted []string, err error) error {
	msg := "the node is cordoned"
	if len(evicted) > 0 {
		msg += " and " + strings.Join(evicted, ", ") + " evicted"
	}
	var ce *catalog.CallError
	if errors.As(err, &ce) {
		return &catalog.CallError{Status: ce.Status, Reason: ce.Reason, Message: ce.Message + " (" + msg + ")"}
	}
	return fmt.Errorf("%w (%s)", err, msg)
}
