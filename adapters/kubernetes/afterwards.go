package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	hpaGVR        = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	quotaGVR      = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	limitRangeGVR = schema.GroupVersionResource{Version: "v1", Resource: "limitranges"}
)

// foresee fills c.After: what will act on the object once the change is
// made, and what it will do — an autoscaler that owns the replicas, a
// GitOps controller or a Helm release that puts back what it holds, an
// owning controller, a quota or a limit range the change runs into.
// Reads that fail leave an actor out: it informs, the dry run decides.
func (a *Adapter) foresee(ctx context.Context, w *write, c *catalog.Change, before, after *unstructured.Unstructured) {
	full := before
	if w.verb == "scale" && before != nil { // a Scale has none of the object's metadata
		if obj, err := a.client(w.r, w.ns).Get(ctx, w.name, metav1.GetOptions{}); err == nil {
			full = obj
		}
	}
	if before != nil && after != nil && w.verb != "delete" {
		if was, now := replicasOf(before), replicasOf(after); was != now {
			c.After = append(c.After, a.autoscalers(ctx, c, now)...)
			if now > was {
				c.After = append(c.After, a.quotaFor(ctx, c.Namespace, c.Object(), podTemplate(full), now-was)...)
			}
		}
	}
	if before == nil && after != nil && w.verb != "delete" {
		// A new workload's pods count against the quotas from the start
		// (a Pod's own create is checked against them by its dry run).
		if n := replicasOf(after); n > 0 && podTemplate(after) != nil && after.GetKind() != "Pod" {
			c.After = append(c.After, a.quotaFor(ctx, c.Namespace, c.Object(), podTemplate(after), n)...)
		}
	}
	if full != nil {
		c.After = append(c.After, managers(full, w.verb == "delete", a.gitopsObject(ctx))...)
		if owner := ownerActor(full, c, w.verb == "delete"); owner != nil {
			c.After = append(c.After, *owner)
		}
	}
	if after != nil && w.verb != "delete" && w.verb != "scale" {
		if tmpl := podTemplate(after); tmpl != nil && (before == nil || !sameResources(podTemplate(before), tmpl)) {
			c.After = append(c.After, a.limitRanges(ctx, c.Namespace, c.Object(), tmpl)...)
		}
	}
}

// autoscalers are the HorizontalPodAutoscalers whose target is c's
// object, each with what it will do to a change of its replicas to now.
func (a *Adapter) autoscalers(ctx context.Context, c *catalog.Change, now int64) []catalog.Actor {
	if c.Namespace == "" {
		return nil
	}
	list, err := a.dyn.Resource(hpaGVR).Namespace(c.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []catalog.Actor
	for _, h := range list.Items {
		kind, _, _ := unstructured.NestedString(h.Object, "spec", "scaleTargetRef", "kind")
		name, _, _ := unstructured.NestedString(h.Object, "spec", "scaleTargetRef", "name")
		if kind != c.Kind || name != c.Name {
			continue
		}
		out = append(out, autoscalerActor(&h, c, now))
	}
	return out
}

// autoscalerActor says what autoscaler h does when its target's
// replicas are set to now, as the HPA controller decides: a target at
// zero is left alone, replicas outside minReplicas..maxReplicas are set
// back to the bound, and within them the metrics decide.
func autoscalerActor(h *unstructured.Unstructured, c *catalog.Change, now int64) catalog.Actor {
	lo, found, _ := unstructured.NestedInt64(h.Object, "spec", "minReplicas")
	if !found {
		lo = 1
	}
	hi, _, _ := unstructured.NestedInt64(h.Object, "spec", "maxReplicas")
	want, _, _ := unstructured.NestedInt64(h.Object, "status", "desiredReplicas")
	act := catalog.Actor{Who: "HorizontalPodAutoscaler " + h.GetNamespace() + "/" + h.GetName()}
	bounds := fmt.Sprintf("keeps %s between %d and %d replicas", c.Object(), lo, hi)
	patch := func(field string, n int64) string {
		return fmt.Sprintf("set the autoscaler's %s to %d: tools.kubernetes.horizontalpodautoscalers.patch({ namespace: %q, name: %q, patch: { spec: { %s: %d } } })",
			field, n, h.GetNamespace(), h.GetName(), field, n)
	}
	switch {
	case now == 0:
		act.Does = bounds + ", but leaves a target scaled to 0 alone: autoscaling stops until it is scaled up again"
	case now < lo:
		act.Undoes = true
		act.Does = fmt.Sprintf("%s: within seconds it sets spec.replicas back to %d", bounds, lo)
		act.Instead = patch("minReplicas", now)
		if now < 1 {
			act.Instead = ""
		}
	case now > hi:
		act.Undoes = true
		act.Does = fmt.Sprintf("%s: within seconds it sets spec.replicas back to %d", bounds, hi)
		act.Instead = patch("maxReplicas", now)
	default:
		active, reason := condition(h, "ScalingActive")
		metrics := metricNames(h)
		switch {
		case active != "True":
			act.Does = fmt.Sprintf("%s and sets them from %s; it is not scaling now (%s), and once it is, it sets spec.replicas from them again: the change may not last", bounds, metrics, orDefault(reason, "no status yet"))
		case want == now:
			act.Does = fmt.Sprintf("%s and sets them from %s; it wants %d now, as this change does, and changes them as the load does", bounds, metrics, want)
		default:
			act.Undoes = true
			act.Does = fmt.Sprintf("%s and sets them from %s; it wants %d now: within seconds it moves spec.replicas back toward %d", bounds, metrics, want, want)
			if now > want {
				act.Instead = patch("minReplicas", now) + " (at least " + fmt.Sprint(now) + " replicas, whatever the load)"
			} else {
				act.Instead = patch("maxReplicas", now) + " (at most " + fmt.Sprint(now) + " replicas, whatever the load)"
			}
		}
	}
	return act
}

// condition is the status and reason of h's condition typ, "" when it
// has none.
func condition(h *unstructured.Unstructured, typ string) (status, reason string) {
	conds, _, _ := unstructured.NestedSlice(h.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			return s, r
		}
	}
	return "", ""
}

// metricNames says what an autoscaler scales on: "cpu at 70 % of
// requests", "its metrics".
func metricNames(h *unstructured.Unstructured) string {
	ms, _, _ := unstructured.NestedSlice(h.Object, "spec", "metrics")
	var names []string
	for _, m := range ms {
		mm, _ := m.(map[string]any)
		res, _ := mm["resource"].(map[string]any)
		if res == nil {
			if t, ok := mm["type"].(string); ok {
				names = append(names, strings.ToLower(t)+" metrics")
			}
			continue
		}
		name, _ := res["name"].(string)
		target, _ := res["target"].(map[string]any)
		if u, ok := target["averageUtilization"].(int64); ok {
			names = append(names, fmt.Sprintf("%s at %d %% of requests", name, u))
		} else {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "cpu at 80 % of requests"
	}
	return strings.Join(names, " and ")
}

// managers are the GitOps controllers and the Helm release that manage
// obj, as its labels, annotations and managed fields name them, and what
// each does to a hand-made change: read, where read can find it, from the
// controller's own object (an Argo CD Application's automated sync and
// self-heal, a Flux Kustomization's interval and suspension, a Flux
// HelmRelease's drift detection). read may be nil.
func managers(obj *unstructured.Unstructured, deleted bool, read gitopsReader) []catalog.Actor {
	lbl, ann := obj.GetLabels(), obj.GetAnnotations()
	fieldManagers := map[string]bool{}
	for _, m := range obj.GetManagedFields() {
		fieldManagers[m.Manager] = true
	}
	if read == nil {
		read = func([]schema.GroupVersionResource, []string, string) *unstructured.Unstructured { return nil }
	}
	what := "puts back what git holds"
	if deleted {
		what = "creates it again from git"
	}
	var out []catalog.Actor
	switch {
	case ann["argocd.argoproj.io/tracking-id"] != "" || lbl["argocd.argoproj.io/instance"] != "" || fieldManagers["argocd-controller"] || fieldManagers["argocd-application-controller"]:
		app, _, _ := strings.Cut(ann["argocd.argoproj.io/tracking-id"], ":")
		if app == "" {
			app = orDefault(lbl["argocd.argoproj.io/instance"], lbl["app.kubernetes.io/instance"])
		}
		out = append(out, argoActor(app, what, read))
	case lbl["kustomize.toolkit.fluxcd.io/name"] != "" || fieldManagers["kustomize-controller"]:
		name := lbl["kustomize.toolkit.fluxcd.io/name"]
		act := catalog.Actor{Who: "Flux Kustomization " + fluxName(lbl, "kustomize"), Undoes: true,
			Does:    "applies it from git at every interval: it " + what,
			Instead: "change it in git, or suspend the Kustomization first (flux suspend kustomization " + name + ")"}
		if k := read(kustomizationGVRs, []string{orDefault(lbl["kustomize.toolkit.fluxcd.io/namespace"], "flux-system")}, name); k != nil && name != "" {
			interval, _, _ := unstructured.NestedString(k.Object, "spec", "interval")
			if suspended, _, _ := unstructured.NestedBool(k.Object, "spec", "suspend"); suspended {
				act.Undoes = false
				act.Does = "is suspended: the change lasts until the Kustomization is resumed, whose next apply " + what
				act.Instead = "change it in git before the Kustomization is resumed"
			} else if interval != "" {
				act.Does = "applies it from git every " + interval + ": within " + interval + " it " + what
			}
		}
		out = append(out, act)
	case lbl["helm.toolkit.fluxcd.io/name"] != "" || fieldManagers["helm-controller"]:
		name := lbl["helm.toolkit.fluxcd.io/name"]
		act := catalog.Actor{Who: "Flux HelmRelease " + fluxName(lbl, "helm"), Undoes: true,
			Does:    "upgrades its release when its values or chart change, and corrects drift when drift detection is on: it puts back what its chart renders",
			Instead: "change the HelmRelease's values in git"}
		if h := read(helmReleaseGVRs, []string{orDefault(lbl["helm.toolkit.fluxcd.io/namespace"], obj.GetNamespace())}, name); h != nil && name != "" {
			interval, _, _ := unstructured.NestedString(h.Object, "spec", "interval")
			mode, _, _ := unstructured.NestedString(h.Object, "spec", "driftDetection", "mode")
			suspended, _, _ := unstructured.NestedBool(h.Object, "spec", "suspend")
			switch {
			case suspended:
				act.Undoes = false
				act.Does = "is suspended: the change lasts until the HelmRelease is resumed and upgrades its release, which puts back what its chart renders"
			case mode == "enabled":
				act.Does = "corrects drift every " + orDefault(interval, "interval") + " (driftDetection: enabled): it puts back what its chart renders"
			default:
				act.Undoes = false
				act.Does = "does not correct drift (driftDetection " + orDefault(mode, "disabled") + "): the change lasts until its release is upgraded (its values or chart change), which puts back what its chart renders"
			}
		}
		out = append(out, act)
	}
	if rel := ann["meta.helm.sh/release-name"]; rel != "" && lbl["helm.toolkit.fluxcd.io/name"] == "" {
		ns := orDefault(ann["meta.helm.sh/release-namespace"], obj.GetNamespace())
		does := "owns it: the next helm upgrade of " + rel + " puts back what its chart renders"
		if deleted {
			does = "owns it: the next helm upgrade of " + rel + " creates it again, and until then the release is missing it"
		}
		out = append(out, catalog.Actor{Who: "Helm release " + ns + "/" + rel, Does: does,
			Instead: "set it in the release's values: tools.helm.upgrade({ release: " + fmt.Sprintf("%q", rel) + ", namespace: " + fmt.Sprintf("%q", ns) + ", reuseValues: true, values: { … } })"})
	}
	return out
}

// argoActor is what Argo CD application app does to a hand-made change,
// read from its Application where it can be found (in the namespace its
// name carries, "ns_app", else Argo CD's own).
func argoActor(app, what string, read gitopsReader) catalog.Actor {
	act := catalog.Actor{Who: "Argo CD application " + orDefault(app, "(unnamed)"), Undoes: true,
		Does:    "manages it from git: a sync " + what + " — at once when the application's self-heal is on",
		Instead: "change it in git, or disable the application's automated sync first"}
	if app == "" {
		return act
	}
	name, namespaces := app, []string{"argocd", "openshift-gitops"}
	if ns, n, ok := strings.Cut(app, "_"); ok {
		name, namespaces = n, []string{ns}
	}
	a := read(applicationGVRs, namespaces, name)
	if a == nil {
		return act
	}
	act.Who = "Argo CD application " + a.GetNamespace() + "/" + a.GetName()
	automated, auto, _ := unstructured.NestedMap(a.Object, "spec", "syncPolicy", "automated")
	selfHeal, _ := automated["selfHeal"].(bool)
	if enabled, ok := automated["enabled"].(bool); ok && !enabled {
		auto = false
	}
	switch {
	case auto && selfHeal:
		act.Does = "syncs it from git with self-heal on: within seconds it " + what
		act.Instead = "change it in git, or turn the application's self-heal off first (spec.syncPolicy.automated.selfHeal: false)"
	case auto:
		act.Undoes = false
		act.Does = "syncs it from git automatically, self-heal off: the change lasts until the next change in git is synced, which " + what
		act.Instead = "change it in git as well"
	default:
		act.Undoes = false
		act.Does = "syncs it from git when someone syncs it (no automated sync): the change lasts until then, and the application shows OutOfSync"
		act.Instead = "change it in git as well"
	}
	return act
}

// gitopsReader finds a GitOps controller's object by name in the first of
// namespaces that has it, at the first version the cluster serves; nil if
// none does or it cannot be read.
type gitopsReader func(gvrs []schema.GroupVersionResource, namespaces []string, name string) *unstructured.Unstructured

// The GitOps objects a plan reads, newest version first.
var (
	applicationGVRs   = []schema.GroupVersionResource{{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}}
	kustomizationGVRs = []schema.GroupVersionResource{{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}, {Group: "kustomize.toolkit.fluxcd.io", Version: "v1beta2", Resource: "kustomizations"}}
	helmReleaseGVRs   = []schema.GroupVersionResource{{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}, {Group: "helm.toolkit.fluxcd.io", Version: "v2beta2", Resource: "helmreleases"}, {Group: "helm.toolkit.fluxcd.io", Version: "v2beta1", Resource: "helmreleases"}}
)

// notServed says whether err is the API server's 404 for a resource it
// does not serve (not for an object it does not have).
func notServed(err error) bool {
	var st apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &st) {
		return false
	}
	d := st.Status().Details
	return d == nil || d.Name == ""
}

// gitopsObject reads GitOps objects with the adapter's credentials; a
// version the cluster does not serve, or a read it may not make, finds
// nothing.
func (a *Adapter) gitopsObject(ctx context.Context) gitopsReader {
	return func(gvrs []schema.GroupVersionResource, namespaces []string, name string) *unstructured.Unstructured {
		for _, gvr := range gvrs {
			for _, ns := range namespaces {
				obj, err := a.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
				if err == nil {
					return obj
				}
				if notServed(err) {
					break // the version is not served: the next one
				}
			}
		}
		return nil
	}
}

// fluxName is "namespace/name" of the Flux object of kind ("kustomize",
// "helm") that labelled an object.
func fluxName(lbl map[string]string, kind string) string {
	name := lbl[kind+".toolkit.fluxcd.io/name"]
	if ns := lbl[kind+".toolkit.fluxcd.io/namespace"]; ns != "" {
		return ns + "/" + name
	}
	return orDefault(name, "(unnamed)")
}

// ownerActor says what obj's controller does to a change of it: a
// Deployment puts back its ReplicaSets' replicas and template and makes a
// deleted one again; another controller may put back what it sets. Pods
// are said by the change's impact.
func ownerActor(obj *unstructured.Unstructured, c *catalog.Change, deleted bool) *catalog.Actor {
	if obj.GetKind() == "Pod" || c.Kind == "Pod" {
		return nil
	}
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		who := ref.Kind + " " + ref.Name
		if obj.GetNamespace() != "" {
			who = ref.Kind + " " + obj.GetNamespace() + "/" + ref.Name
		}
		act := &catalog.Actor{Who: who, Instead: "change " + who + " instead"}
		switch {
		case ref.Kind == "Deployment" && c.Kind == "ReplicaSet" && deleted:
			act.Undoes, act.Does = true, "controls it: it makes the ReplicaSet again at once"
		case ref.Kind == "Deployment" && c.Kind == "ReplicaSet":
			act.Undoes, act.Does = true, "controls it: it sets the ReplicaSet's replicas itself, within seconds"
		case deleted:
			act.Does = "controls it: its controller may make it again"
		default:
			act.Does = "controls it: its controller may put back the fields it sets"
		}
		return act
	}
	return nil
}

// podTemplate is the pod spec a workload (or a Pod) runs, nil for other
// objects.
func podTemplate(obj *unstructured.Unstructured) map[string]any {
	if obj == nil {
		return nil
	}
	if obj.GetKind() == "Pod" {
		spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
		return spec
	}
	if obj.GetKind() == "CronJob" {
		spec, _, _ := unstructured.NestedMap(obj.Object, "spec", "jobTemplate", "spec", "template", "spec")
		return spec
	}
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec", "template", "spec")
	return spec
}

// sameResources says whether two pod specs ask for the same resources,
// container by container.
func sameResources(a, b map[string]any) bool {
	x, y := podSpec(a), podSpec(b)
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	for i := range max(len(x.Containers), len(y.Containers)) {
		if i >= len(x.Containers) || i >= len(y.Containers) || !equalResources(x.Containers[i].Resources, y.Containers[i].Resources) {
			return false
		}
	}
	return true
}

func equalResources(a, b corev1.ResourceRequirements) bool {
	same := func(p, q corev1.ResourceList) bool {
		if len(p) != len(q) {
			return false
		}
		for k, v := range p {
			if w, ok := q[k]; !ok || v.Cmp(w) != 0 {
				return false
			}
		}
		return true
	}
	return same(a.Requests, b.Requests) && same(a.Limits, b.Limits)
}

// podSpec decodes a pod spec, nil when it does not decode.
func podSpec(spec map[string]any) *corev1.PodSpec {
	if spec == nil {
		return nil
	}
	var ps corev1.PodSpec
	if runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &ps) != nil {
		return nil
	}
	return &ps
}

// quotaFor says which ResourceQuota of namespace ns leaves room for
// fewer than more new pods of template: the workload's controller then
// starts only as many as fit, and the rest wait.
func (a *Adapter) quotaFor(ctx context.Context, ns, obj string, template map[string]any, more int64) []catalog.Actor {
	ps := podSpec(template)
	if ns == "" || ps == nil || more <= 0 {
		return nil
	}
	list, err := a.dyn.Resource(quotaGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	per := podResources(ps)
	per[corev1.ResourcePods] = *apiresource.NewQuantity(1, apiresource.DecimalSI)
	var out []catalog.Actor
	for _, q := range list.Items {
		var rq corev1.ResourceQuota
		if runtime.DefaultUnstructuredConverter.FromUnstructured(q.Object, &rq) != nil {
			continue
		}
		fits, short := more, corev1.ResourceName("")
		for name, hard := range rq.Status.Hard {
			need, ok := per[name]
			if !ok || need.IsZero() {
				continue
			}
			used := rq.Status.Used[name]
			room := hard.DeepCopy()
			room.Sub(used)
			n := int64(0)
			if room.Sign() > 0 {
				n = room.MilliValue() / max(need.MilliValue(), 1)
			}
			if n < fits {
				fits, short = n, name
			}
		}
		if short == "" {
			continue
		}
		hard, used := rq.Status.Hard[short], rq.Status.Used[short]
		out = append(out, catalog.Actor{Who: "ResourceQuota " + ns + "/" + q.GetName(), Prevents: true,
			Does: fmt.Sprintf("has room for %d of the %d new pods of %s (%s: %s of %s used): the rest are not created until room is made",
				fits, more, obj, short, used.String(), hard.String()),
			Instead: "raise the quota's " + string(short) + ", or ask for fewer replicas"})
	}
	return out
}

// podResources is what one pod of ps counts against a quota: its
// containers' requests and limits, summed.
func podResources(ps *corev1.PodSpec) corev1.ResourceList {
	out := corev1.ResourceList{}
	add := func(name corev1.ResourceName, q apiresource.Quantity) {
		sum := out[name]
		sum.Add(q)
		out[name] = sum
	}
	for _, c := range ps.Containers {
		for k, v := range c.Resources.Requests {
			add(k, v)
			if k == corev1.ResourceCPU || k == corev1.ResourceMemory {
				add(corev1.ResourceName("requests."+string(k)), v)
			}
		}
		for k, v := range c.Resources.Limits {
			add(corev1.ResourceName("limits."+string(k)), v)
		}
	}
	return out
}

// limitRanges says which LimitRange of namespace ns refuses the pods of
// template: a container asking more than its max or less than its min.
func (a *Adapter) limitRanges(ctx context.Context, ns, obj string, template map[string]any) []catalog.Actor {
	ps := podSpec(template)
	if ns == "" || ps == nil {
		return nil
	}
	list, err := a.dyn.Resource(limitRangeGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []catalog.Actor
	for _, l := range list.Items {
		var lr corev1.LimitRange
		if runtime.DefaultUnstructuredConverter.FromUnstructured(l.Object, &lr) != nil {
			continue
		}
		var broken []string
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for _, c := range ps.Containers {
				for name, most := range item.Max {
					for what, list := range map[string]corev1.ResourceList{"limit": c.Resources.Limits, "request": c.Resources.Requests} {
						if v, ok := list[name]; ok && v.Cmp(most) > 0 {
							broken = append(broken, fmt.Sprintf("container %s's %s %s %s is above the most, %s", c.Name, name, what, v.String(), most.String()))
						}
					}
				}
				for name, least := range item.Min {
					if v, ok := c.Resources.Requests[name]; ok && v.Cmp(least) < 0 {
						broken = append(broken, fmt.Sprintf("container %s's %s request %s is below the least, %s", c.Name, name, v.String(), least.String()))
					}
				}
			}
		}
		if len(broken) == 0 {
			continue
		}
		slices.Sort(broken)
		out = append(out, catalog.Actor{Who: "LimitRange " + ns + "/" + l.GetName(), Prevents: true,
			Does:    "refuses the pods of " + obj + ": " + strings.Join(broken, "; ") + ": no new pod starts",
			Instead: "ask for resources within the LimitRange"})
	}
	return out
}
