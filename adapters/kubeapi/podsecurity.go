package kubeapi

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kubecode/kubecode/catalog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"
)

// Pod privilege is judged with the Pod Security Standards as the API
// server's own admission plugin evaluates them (k8s.io/pod-security-admission,
// its checks at the latest version), on every pod template a change
// creates or changes, whichever path it takes (a typed create, a patch, an
// apply, a manifest, a Helm release): what the object is after the change
// is judged, not the call's arguments.

// evaluator is the upstream registry of checks, built once.
var evaluator = sync.OnceValue(func() psapolicy.Evaluator {
	e, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		panic("kubeapi: the Pod Security Standards' checks: " + err.Error()) // the upstream's own list: a programmer error
	}
	return e
})

// podTemplate finds obj's pod template (a workload's, a CronJob's) or a
// Pod's own metadata and spec, as the API types.
func podTemplate(obj *unstructured.Unstructured) (*corev1.PodTemplateSpec, bool) {
	if obj == nil {
		return nil, false
	}
	var raw map[string]any
	for _, path := range [][]string{{"spec", "jobTemplate", "spec", "template"}, {"spec", "template"}} {
		if m, ok, _ := unstructured.NestedMap(obj.Object, path...); ok {
			if _, hasSpec := m["spec"]; hasSpec {
				raw = m
				break
			}
		}
	}
	if raw == nil && obj.GetKind() == "Pod" {
		md, _, _ := unstructured.NestedMap(obj.Object, "metadata")
		spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
		raw = map[string]any{"metadata": md, "spec": spec}
	}
	if raw == nil {
		return nil, false
	}
	var t corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &t); err != nil {
		return nil, false
	}
	return &t, true
}

// violations are the Pod Security Standards checks of level that t fails,
// each as "reason (detail)".
func violations(level psaapi.Level, t *corev1.PodTemplateSpec) []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, r := range evaluator().EvaluatePod(psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}, &t.ObjectMeta, &t.Spec) {
		if r.Allowed {
			continue
		}
		s := r.ForbiddenReason
		if r.ForbiddenDetail != "" {
			s += " (" + r.ForbiddenDetail + ")"
		}
		out = append(out, s)
	}
	return out
}

// JudgePodSecurity judges the pod template after a change leaves it:
// c.PodSecurity names the baseline checks it fails that before's template
// passed (a template the change does not touch is not judged again), and
// a plan line names the restricted checks it fails that before's did not
// (all of them for a new template). Nothing is set for an
// object without a pod template, or when after is unknown.
func JudgePodSecurity(c *catalog.Change, before, after *unstructured.Unstructured) {
	t, ok := podTemplate(after)
	if !ok {
		return
	}
	old, hadOld := podTemplate(before)
	if hadOld && equalTemplates(old, t) {
		return
	}
	var had []string
	if hadOld {
		had = violations(psaapi.LevelBaseline, old)
	}
	var fresh []string
	for _, v := range violations(psaapi.LevelBaseline, t) {
		if !slices.Contains(had, v) {
			fresh = append(fresh, v)
		}
	}
	if len(fresh) > 0 {
		c.PodSecurity = "its pods would violate the baseline Pod Security Standard: " + strings.Join(fresh, ", ")
		c.Diff = append(c.Diff, "⚠ pod security: "+c.PodSecurity)
		return
	}
	// The restricted checks it fails: all of them for a new template, the
	// ones the change makes it fail for a changed one (an image bump of a
	// template that never was restricted says nothing).
	var hadR []string
	if hadOld {
		hadR = violations(psaapi.LevelRestricted, old)
	}
	var r []string
	for _, v := range violations(psaapi.LevelRestricted, t) {
		if !slices.Contains(hadR, v) {
			r = append(r, v)
		}
	}
	if len(r) > 0 {
		c.Diff = append(c.Diff, "pod security: baseline; not restricted: "+strings.Join(r, ", "))
	}
}

// equalTemplates says whether a change leaves a pod template as it was.
func equalTemplates(a, b *corev1.PodTemplateSpec) bool {
	ua, err1 := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	ub, err2 := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	return err1 == nil && err2 == nil && len(Diff(ua, ub)) == 0
}

// podSecurityLevels orders the levels from the loosest; a label not set
// leaves the cluster's default, ranked apart.
var podSecurityLevels = map[string]int{"privileged": 0, "baseline": 1, "restricted": 2}

// podSecurityPrefix starts the labels that set a namespace's pod security.
const podSecurityPrefix = "pod-security.kubernetes.io/"

// LoosenedPodSecurity says how a namespace's pod-security labels loosen
// from before to after ("enforce: restricted → privileged"), or "": a mode
// (enforce, audit, warn) set to a looser level or to privileged, a label
// removed, or a version pinned other than latest. Tightening is no
// loosening.
func LoosenedPodSecurity(before, after map[string]string) string {
	var why []string
	for _, mode := range []string{"enforce", "audit", "warn"} {
		k := podSecurityPrefix + mode
		was, had := before[k]
		now, has := after[k]
		_, known := podSecurityLevels[now]
		switch {
		case had && !has:
			why = append(why, fmt.Sprintf("%s: %s → removed", mode, was))
		case !has || had && now == was:
		case !known:
			why = append(why, fmt.Sprintf("%s: %q is no level", mode, now))
		case now == "privileged", had && podSecurityLevels[now] < podSecurityLevels[was]:
			why = append(why, fmt.Sprintf("%s: %s → %s", mode, orNone(was, had), now))
		}
		kv := k + "-version"
		if v, ok := after[kv]; ok && v != before[kv] && v != "latest" {
			why = append(why, fmt.Sprintf("%s-version: %s → %s (an older version checks less)", mode, orNone(before[kv], before[kv] != ""), v))
		}
	}
	return strings.Join(why, ", ")
}

func orNone(s string, ok bool) string {
	if !ok {
		return "(none)"
	}
	return s
}

// CriticalAfter is Critical judged on the object as the change leaves it,
// whichever path made it: a namespace's pod-security labels are judged
// by how they loosen (LoosenedPodSecurity), for a typed create as for a
// patch, an apply or a manifest; without the result (a failed dry run, a
// delete) the paths the call names decide, as Critical does.
func CriticalAfter(c *catalog.Change, group string, before, after *unstructured.Unstructured) string {
	if after == nil || group != "" || c.Kind != "Namespace" {
		return Critical(c, group)
	}
	rest := *c
	rest.Paths = slices.DeleteFunc(slices.Clone(c.Paths), func(p string) bool {
		return strings.HasPrefix(p, "metadata.labels["+podSecurityPrefix)
	})
	if why := Critical(&rest, group); why != "" {
		return why
	}
	var was map[string]string
	if before != nil {
		was = before.GetLabels()
	}
	if why := LoosenedPodSecurity(was, after.GetLabels()); why != "" {
		return "a namespace's pod-security labels decide which pods may run in it, and this loosens them (" + why + ")"
	}
	return ""
}
