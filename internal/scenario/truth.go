package scenario

import (
	"cmp"
	"encoding/base64"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// CanaryPrefix starts every secret value the demo seeds. No tool output
// should ever contain it.
const CanaryPrefix = "KUBECODE-CANARY-"

// Truth is what a scenario seeded, computed from its fixtures and generator,
// so tests can check an agent's answers. Lists are sorted by namespace and
// name. Counts cover the seeded namespaces only: the cluster also holds the
// default namespace's "kubernetes" Service, which has no endpoints either
// (no endpoint reconciler runs).
type Truth struct {
	// Namespaces seeded, sorted.
	Namespaces []string
	// Pods is the number of pods seeded; HealthyPods of them were generated
	// Running and Ready.
	Pods, HealthyPods int
	// CrashLooping are the containers waiting in CrashLoopBackOff.
	CrashLooping []CrashLoop
	// Restarted are all pods with a container restartCount > 0, broken or
	// not.
	Restarted []PodRef
	// ImagePullBackOff are pods with a container waiting in ImagePullBackOff
	// or ErrImagePull.
	ImagePullBackOff []PodRef
	// Unschedulable are pods with PodScheduled False (Pending, no node).
	Unschedulable []PodRef
	// StuckDeployments have condition Progressing False
	// (ProgressDeadlineExceeded).
	StuckDeployments []ObjectRef
	// ServicesWithoutEndpoints are seeded Services without a ready
	// endpoint in any of their EndpointSlices (the EndpointSlice controller
	// lists a Service's not-ready pods too).
	ServicesWithoutEndpoints []ObjectRef
	// Canaries are the values of all seeded Secrets that start with
	// CanaryPrefix.
	Canaries []string
	// CRD is the custom resource of the scenario.
	CRD CRD
	// Widgets are the seeded instances of CRD.
	Widgets []ObjectRef
	// Live names the workloads the cluster itself runs; nil where Seed
	// found no simulated nodes to run them on (and for Describe).
	Live *Live
	// Events is the number of seeded Events, labelled SeededLabel. The
	// cluster's own components add more (the scheduler's FailedScheduling,
	// the controllers' ScalingReplicaSet, ...).
	Events int
}

// ObjectRef names a namespaced object.
type ObjectRef struct {
	Namespace, Name string
}

// PodRef is a pod and the sum of its containers' restart counts.
type PodRef struct {
	Namespace, Name string
	Restarts        int32
}

// CrashLoop is one crash-looping container.
type CrashLoop struct {
	Namespace, Pod, Container string
	Restarts                  int32
	// ExitCode and Reason are from lastState.terminated (e.g. 137
	// OOMKilled, 1 Error).
	ExitCode int32
	Reason   string
	// LastLogLine is the last line of the previous container's log
	// (`kubectl logs --previous`), the error it died with.
	LastLogLine string
}

// CRD describes the scenario's custom resource definition.
type CRD struct {
	Name, Group, Version, Resource, Kind, ShortName string
	Namespaced                                      bool
}

// truth computes the Truth of objs; healthy is the number of generated pods.
func (o *objects) truth(healthy int) *Truth {
	t := &Truth{Pods: len(o.pods), HealthyPods: healthy, Events: len(o.events)}
	for _, ns := range o.namespaces {
		t.Namespaces = append(t.Namespaces, ns.Name)
	}
	slices.Sort(t.Namespaces)

	previous := map[[3]string][]string{}
	for _, l := range o.logs {
		previous[[3]string{l.Namespace, l.Pod, l.Container}] = l.Previous
	}
	for _, p := range o.pods {
		var restarts int32
		pulling := false
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
			w := cs.State.Waiting
			if w == nil {
				continue
			}
			switch w.Reason {
			case "CrashLoopBackOff":
				c := CrashLoop{Namespace: p.Namespace, Pod: p.Name, Container: cs.Name, Restarts: cs.RestartCount}
				if term := cs.LastTerminationState.Terminated; term != nil {
					c.ExitCode, c.Reason = term.ExitCode, term.Reason
				}
				if lines := previous[[3]string{p.Namespace, p.Name, cs.Name}]; len(lines) > 0 {
					c.LastLogLine = lines[len(lines)-1]
				}
				t.CrashLooping = append(t.CrashLooping, c)
			case "ImagePullBackOff", "ErrImagePull":
				pulling = true
			}
		}
		ref := PodRef{Namespace: p.Namespace, Name: p.Name, Restarts: restarts}
		if restarts > 0 {
			t.Restarted = append(t.Restarted, ref)
		}
		if pulling {
			t.ImagePullBackOff = append(t.ImagePullBackOff, ref)
		}
		if unscheduled(p) {
			t.Unschedulable = append(t.Unschedulable, ref)
		}
	}
	for _, d := range o.deployments {
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse {
				t.StuckDeployments = append(t.StuckDeployments, ObjectRef{d.Namespace, d.Name})
			}
		}
	}
	withReady := map[ObjectRef]bool{}
	for _, s := range o.slices {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				withReady[ObjectRef{s.Namespace, s.Labels["kubernetes.io/service-name"]}] = true
			}
		}
	}
	for _, s := range o.services {
		if ref := (ObjectRef{s.Namespace, s.Name}); !withReady[ref] {
			t.ServicesWithoutEndpoints = append(t.ServicesWithoutEndpoints, ref)
		}
	}
	for _, s := range o.secrets {
		var values []string
		for _, v := range s.StringData {
			values = append(values, v)
		}
		for _, v := range s.Data {
			values = append(values, string(v))
		}
		for _, v := range values {
			if strings.HasPrefix(v, CanaryPrefix) {
				t.Canaries = append(t.Canaries, v)
			} else if b, err := base64.StdEncoding.DecodeString(v); err == nil && strings.HasPrefix(string(b), CanaryPrefix) {
				t.Canaries = append(t.Canaries, string(b))
			}
		}
	}
	slices.Sort(t.Canaries)
	if len(o.crds) > 0 {
		t.CRD = crdOf(o.crds[0].Object)
		for _, u := range o.custom {
			if u.GetKind() == t.CRD.Kind {
				t.Widgets = append(t.Widgets, ObjectRef{u.GetNamespace(), u.GetName()})
			}
		}
	}

	byObject := func(a, b ObjectRef) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	}
	byPod := func(a, b PodRef) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	}
	slices.SortFunc(t.CrashLooping, func(a, b CrashLoop) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.Container, b.Container))
	})
	slices.SortFunc(t.Restarted, byPod)
	slices.SortFunc(t.ImagePullBackOff, byPod)
	slices.SortFunc(t.Unschedulable, byPod)
	slices.SortFunc(t.StuckDeployments, byObject)
	slices.SortFunc(t.ServicesWithoutEndpoints, byObject)
	slices.SortFunc(t.Widgets, byObject)
	return t
}

// unscheduled reports whether p's PodScheduled condition is False.
func unscheduled(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return false
}

// crdOf reads the names of a CustomResourceDefinition object.
func crdOf(obj map[string]any) CRD {
	str := func(v any) string { s, _ := v.(string); return s }
	spec, _ := obj["spec"].(map[string]any)
	names, _ := spec["names"].(map[string]any)
	meta, _ := obj["metadata"].(map[string]any)
	c := CRD{
		Name:       str(meta["name"]),
		Group:      str(spec["group"]),
		Resource:   str(names["plural"]),
		Kind:       str(names["kind"]),
		Namespaced: str(spec["scope"]) == "Namespaced",
	}
	if sn, _ := names["shortNames"].([]any); len(sn) > 0 {
		c.ShortName = str(sn[0])
	}
	if vs, _ := spec["versions"].([]any); len(vs) > 0 {
		v, _ := vs[0].(map[string]any)
		c.Version = str(v["name"])
	}
	return c
}
