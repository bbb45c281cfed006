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

// podTemplates finds obj's pod templates where its kind keeps them
// (templatePaths), as the API types. A template that does not convert is
// given as nil: judged as failing, never passed over.
func podTemplates(obj *unstructured.Unstructured) []*corev1.PodTemplateSpec {
	if obj == nil {
		return nil
	}
	var out []*corev1.PodTemplateSpec
	for _, path := range templatePaths(obj) {
		raw := obj.Object
		if len(path) > 0 {
			m, ok, _ := unstructured.NestedMap(obj.Object, path...)
			if !ok {
				continue
			}
			raw = m
		}
		if _, ok := raw["spec"]; !ok {
			continue
		}
		md, _ := raw["metadata"].(map[string]any)
		var t corev1.PodTemplateSpec
		if runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"metadata": md, "spec": raw["spec"]}, &t) != nil {
			out = append(out, nil)
			continue
		}
		out = append(out, &t)
	}
	return out
}

// violations are the Pod Security Standards checks of level that the
// templates fail, each as "reason (detail)"; a template that did not
// convert fails as "unreadable pod template".
func violations(level psaapi.Level, ts []*corev1.PodTemplateSpec) []string {
	var out []string
	for _, t := range ts {
		if t == nil {
			out = append(out, "unreadable pod template (it does not convert to a Pod's spec)")
			continue
		}
		for _, r := range evaluator().EvaluatePod(psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}, &t.ObjectMeta, &t.Spec) {
			if r.Allowed {
				continue
			}
			s := r.ForbiddenReason
			if r.ForbiddenDetail != "" {
				s += " (" + r.ForbiddenDetail + ")"
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// JudgePodSecurity judges the pod templates after a change leaves them.
// c.PodSecurity is set when they fail the baseline Pod Security Standard
// and the change makes them (a new object, a new failure) or changes a
// spec that fails it (a new image or a new hostPath path in a privileged
// pod is a privileged act too); a change that leaves the specs as they
// were (a scale, a restart's annotation) is not judged again. A plan line
// names the restricted checks the change makes them fail (all of them for
// a new template).
func JudgePodSecurity(c *catalog.Change, before, after *unstructured.Unstructured) {
	JudgePodSecurityLive(c, before, before, after)
}

// JudgePodSecurityLive is JudgePodSecurity for a change whose object's
// specs are compared with old (a release's previous revision, without
// the server's defaults) while its failures are compared with live (the
// cluster's copy, which someone may have made safer by hand: a change that
// restores a privilege the live object lacks is a new failure).
func JudgePodSecurityLive(c *catalog.Change, old, live, after *unstructured.Unstructured) {
	now := podTemplates(after)
	if len(now) == 0 {
		return
	}
	was := podTemplates(old)
	fails := violations(psaapi.LevelBaseline, now)
	had := violations(psaapi.LevelBaseline, podTemplates(live))
	fresh := slices.ContainsFunc(fails, func(v string) bool { return !slices.Contains(had, v) })
	if len(was) > 0 && sameSpecs(was, now) && !fresh {
		return
	}
	if len(fails) > 0 {
		why := "its pods would violate the baseline Pod Security Standard: "
		if !fresh {
			why = "it changes pods that violate the baseline Pod Security Standard: "
		}
		c.PodSecurity = why + strings.Join(fails, ", ")
		c.Diff = append(c.Diff, "⚠ pod security: "+c.PodSecurity)
		return
	}
	hadR := violations(psaapi.LevelRestricted, was)
	var r []string
	for _, v := range violations(psaapi.LevelRestricted, now) {
		if !slices.Contains(hadR, v) {
			r = append(r, v)
		}
	}
	if len(r) > 0 {
		c.Diff = append(c.Diff, "pod security: baseline; not restricted: "+strings.Join(r, ", "))
	}
}

// sameSpecs says whether a change leaves every pod template's spec as it
// was (its metadata may change: a restart's annotation runs the same pods).
func sameSpecs(a, b []*corev1.PodTemplateSpec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] == nil || b[i] == nil {
			return false
		}
		ua, err1 := runtime.DefaultUnstructuredConverter.ToUnstructured(&a[i].Spec)
		ub, err2 := runtime.DefaultUnstructuredConverter.ToUnstructured(&b[i].Spec)
		if err1 != nil || err2 != nil || len(Diff(ua, ub)) != 0 {
			return false
		}
	}
	return true
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
