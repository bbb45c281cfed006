package controlplane

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// failureAnnotation asks for a failure whatever the spec says:
// image-pull, crash-loop or oom-killed. Another value leaves the pod
// Pending.
const failureAnnotation = "simulate.kubecode.io/failure"

// Kubelet back-off: the first restart is at once, then 10 s doubling up to
// 5 min, as the kubelet's crash-loop and image-pull back-offs.
const (
	maxBackOff  = 5 * time.Minute
	oomAfter    = time.Second // an OOMKilled container dies this soon
	mountRetry  = 10 * time.Second
	maxAdvances = 200 // restarts simulated in one evaluation
)

// podEnv is what a pod's evaluation reads from the cluster and the node.
type podEnv struct {
	images    *Images
	configMap func(namespace, name string) (*corev1.ConfigMap, bool)
	secret    func(namespace, name string) (*corev1.Secret, bool)
	// run simulates a process (the controller caches the runs).
	run     func(p containerProc) run
	now     time.Time
	backOff time.Duration // first crash-loop delay; zero means 10s
	hostIP  string
	podIP   func() string
	// net is the cluster as the pod's programs reach it (nil: they reach
	// nothing, their network commands are not simulated).
	net network
}

// simEvent is an Event the kubelet would write about the pod or one of its
// containers (fieldPath spec.containers{name}).
type simEvent struct {
	fieldPath, eventType, reason, message string
}

// podResult is one evaluation: the status the pod has now, the events of
// what happened, and when to evaluate again (zero: only on a change).
type podResult struct {
	status corev1.PodStatus
	events []simEvent
	next   time.Time
}

type podSim struct {
	env podEnv
	pod *corev1.Pod
	res podResult
}

// evaluatePod decides a pod's status as a kubelet would, from its spec, its
// last status, the objects it refers to and the time.
func evaluatePod(pod *corev1.Pod, env podEnv) (podResult, bool) {
	failure, forced := pod.Annotations[failureAnnotation]
	if forced && failure != "image-pull" && failure != "crash-loop" && failure != "oom-killed" {
		return podResult{}, false
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return podResult{}, false
	}
	if env.backOff == 0 {
		env.backOff = 10 * time.Second
	}
	s := &podSim{env: env, pod: pod}
	st := pod.Status.DeepCopy()
	s.res.status = *st
	now := metav1.NewTime(env.now)
	if st.StartTime == nil {
		st.StartTime = &now
	}
	st.HostIP = env.hostIP
	st.HostIPs = []corev1.HostIP{{IP: env.hostIP}}

	// Volumes are mounted before the sandbox starts.
	sandbox := condition(st, corev1.PodReadyToStartContainers) == corev1.ConditionTrue
	if !sandbox {
		if msg := s.missingVolume(); msg != "" {
			s.event("", corev1.EventTypeWarning, "FailedMount", msg)
			s.later(mountRetry)
			st.ContainerStatuses = waitingAll(pod.Spec.Containers, st.ContainerStatuses, "ContainerCreating", "")
			st.InitContainerStatuses = waitingAll(pod.Spec.InitContainers, st.InitContainerStatuses, "PodInitializing", "")
			setCondition(st, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", "", now)
			setCondition(st, corev1.PodInitialized, boolCondition(len(pod.Spec.InitContainers) == 0), "", "", now)
			s.readiness(st, now)
			st.Phase = corev1.PodPending
			s.res.status = *st
			return s.res, true
		}
		setCondition(st, corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", "", now)
	}
	if st.PodIP == "" {
		st.PodIP = env.podIP()
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	}

	// Init containers run one after the other; sidecars (restartPolicy
	// Always) keep running beside what follows.
	startAt := env.now
	if len(st.InitContainerStatuses) == 0 && len(st.ContainerStatuses) == 0 && pod.Status.StartTime != nil {
		startAt = pod.Status.StartTime.Time
	}
	initialized := true
	failed := false
	var inits []corev1.ContainerStatus
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		prev := findStatus(pod.Status.InitContainerStatuses, c.Name)
		if !initialized {
			inits = append(inits, waiting(c, prev, "PodInitializing", ""))
			continue
		}
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		policy := pod.Spec.RestartPolicy
		if sidecar {
			policy = corev1.RestartPolicyAlways
		} else if policy == corev1.RestartPolicyAlways {
			policy = corev1.RestartPolicyOnFailure
		}
		cs, done := s.container(c, prev, policy, "spec.initContainers", startAt)
		inits = append(inits, cs)
		switch {
		case sidecar && cs.State.Running != nil:
		case !sidecar && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			startAt = maxTime(startAt, cs.State.Terminated.FinishedAt.Time)
		case done:
			failed, initialized = true, false
		default:
			initialized = false
		}
	}
	st.InitContainerStatuses = inits

	var mains []corev1.ContainerStatus
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		prev := findStatus(pod.Status.ContainerStatuses, c.Name)
		if !initialized {
			mains = append(mains, waiting(c, prev, "PodInitializing", ""))
			continue
		}
		cs, _ := s.container(c, prev, pod.Spec.RestartPolicy, "spec.containers", startAt)
		mains = append(mains, cs)
	}
	st.ContainerStatuses = mains

	if initialized {
		setCondition(st, corev1.PodInitialized, corev1.ConditionTrue, "", "", now)
	} else {
		setCondition(st, corev1.PodInitialized, corev1.ConditionFalse, "ContainersNotInitialized",
			fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(unfinished(st.InitContainerStatuses), " ")), now)
	}
	st.Phase = phase(pod, st, initialized, failed)
	s.readiness(st, now)
	s.res.status = *st
	return s.res, true
}

// container advances one container from its last status to now.
func (s *podSim) container(c *corev1.Container, prev *corev1.ContainerStatus, policy corev1.RestartPolicy, field string, startAt time.Time) (corev1.ContainerStatus, bool) {
	fieldPath := fmt.Sprintf("%s{%s}", field, c.Name)
	now := s.env.now
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "", Started: new(bool)}
	if prev != nil {
		cs.RestartCount = prev.RestartCount
		cs.LastTerminationState = prev.LastTerminationState
		cs.State = prev.State
		cs.ImageID = prev.ImageID
		if prev.Image != c.Image {
			// The pod's image changed: the kubelet kills the container and
			// starts one from the new image.
			if r := prev.State.Running; r != nil {
				s.event(fieldPath, corev1.EventTypeNormal, "Killing", fmt.Sprintf("Container %s definition changed, will be restarted", c.Name))
				cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "Error", StartedAt: r.StartedAt, FinishedAt: metav1.NewTime(now)}}
				cs.RestartCount++
			}
			cs.State, cs.ImageID = corev1.ContainerState{}, ""
		}
	}
	forced := s.pod.Annotations[failureAnnotation]

	img, ref := s.env.images.Lookup(c.Image)
	if forced == "image-pull" {
		img = nil
	}
	for range maxAdvances {
		switch {
		case cs.State.Running != nil:
			started := cs.State.Running.StartedAt.Time
			r, p := s.process(c, img, started)
			end, code, reason, msg := s.ending(c, r, p, started, fieldPath)
			if end.After(now) || end.IsZero() {
				cs.Ready = s.ready(c, r, p, started, fieldPath)
				*cs.Started = true
				if !end.IsZero() {
					s.at(end)
				}
				return cs, false
			}
			term := &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: reason, Message: msg,
				StartedAt: cs.State.Running.StartedAt, FinishedAt: metav1.NewTime(end)}
			if reason == "OOMKilled" {
				// What the node's kernel says, as the kubelet and the node
				// problem detector report it: an OOMKilling event.
				s.event(fieldPath, corev1.EventTypeWarning, "OOMKilling", fmt.Sprintf("Memory cgroup out of memory: Killed process %d (%s) in container %s of pod %s/%s; its memory limit is %s",
					1+len(c.Name)%97, path.Base(firstOr(p.argv, c.Name)), c.Name, s.pod.Namespace, s.pod.Name, limitOf(c)))
			}
			restart := policy == corev1.RestartPolicyAlways || (policy == corev1.RestartPolicyOnFailure && code != 0)
			if !restart {
				cs.State = corev1.ContainerState{Terminated: term}
				return cs, true
			}
			cs.LastTerminationState = corev1.ContainerState{Terminated: term}
			delay := s.backOff(cs.RestartCount)
			if delay == 0 {
				s.start(&cs, fieldPath, img, ref, end, true)
				continue
			}
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c.Name, s.pod.Name, s.pod.Namespace, s.pod.UID)}}
			s.event(fieldPath, corev1.EventTypeWarning, "BackOff", fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", c.Name, s.pod.Name, s.pod.Namespace, s.pod.UID))
		case cs.State.Terminated != nil:
			return cs, true
		case cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" && cs.LastTerminationState.Terminated != nil && cs.ImageID != "":
			at := cs.LastTerminationState.Terminated.FinishedAt.Add(s.backOff(cs.RestartCount))
			if at.After(now) {
				s.at(at)
				return cs, false
			}
			s.start(&cs, fieldPath, img, ref, at, true)
		default: // not started: pull, configure, start
			if img == nil {
				s.pullFailed(&cs, fieldPath, c, ref, prev)
				return cs, false
			}
			if _, err := s.containerEnv(c); err != "" {
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: err}}
				s.event(fieldPath, corev1.EventTypeWarning, "Failed", "Error: "+err)
				s.later(mountRetry)
				return cs, false
			}
			if cs.ImageID == "" {
				s.event(fieldPath, corev1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", c.Image))
				s.event(fieldPath, corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Successfully pulled image %q in 412ms (412ms including waiting). Image size: 18743914 bytes.", c.Image))
			}
			s.start(&cs, fieldPath, img, ref, startAt, cs.LastTerminationState.Terminated != nil)
		}
	}
	return cs, false
}

// start starts a container at t: a process that cannot start ends at
// once with StartError.
func (s *podSim) start(cs *corev1.ContainerStatus, fieldPath string, img *Image, ref string, t time.Time, restart bool) {
	if t.After(s.env.now) {
		t = s.env.now
	}
	if restart {
		cs.RestartCount++
	}
	cs.ImageID = ref
	if i := strings.IndexByte(ref, '@'); i < 0 {
		cs.ImageID = ref + "@sha256:" + fakeDigest(ref)
	}
	cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t)}}
	name := fieldPath[strings.IndexByte(fieldPath, '{')+1 : len(fieldPath)-1]
	s.event(fieldPath, corev1.EventTypeNormal, "Created", "Created container: "+name)
	s.event(fieldPath, corev1.EventTypeNormal, "Started", "Started container "+name)
}

// pullFailed leaves a container whose image cannot be pulled waiting:
// ErrImagePull on the first attempt, then ImagePullBackOff.
func (s *podSim) pullFailed(cs *corev1.ContainerStatus, fieldPath string, c *corev1.Container, ref string, prev *corev1.ContainerStatus) {
	pullMsg := fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", ref, ref, ref)
	if prev == nil || prev.State.Waiting == nil || prev.Image != c.Image || (prev.State.Waiting.Reason != "ErrImagePull" && prev.State.Waiting.Reason != "ImagePullBackOff") {
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "rpc error: code = NotFound desc = " + pullMsg}}
		s.event(fieldPath, corev1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", c.Image))
		s.event(fieldPath, corev1.EventTypeWarning, "Failed", fmt.Sprintf("Failed to pull image %q: rpc error: code = NotFound desc = %s", c.Image, pullMsg))
		s.event(fieldPath, corev1.EventTypeWarning, "Failed", "Error: ErrImagePull")
		s.later(time.Second)
		return
	}
	cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %s", c.Image, pullMsg)}}
	s.event(fieldPath, corev1.EventTypeNormal, "BackOff", fmt.Sprintf("Back-off pulling image %q", c.Image))
	s.event(fieldPath, corev1.EventTypeWarning, "Failed", "Error: ImagePullBackOff")
	s.later(maxBackOff / 10)
}

// process is the container's program started at started, simulated
// (cached by the caller). A program that reaches the cluster reaches it as
// it was when the program started; with no start (zero) it reaches nothing.
func (s *podSim) process(c *corev1.Container, img *Image, started time.Time) (run, containerProc) {
	env, _ := s.containerEnv(c)
	p := containerProc{image: img, env: env, files: s.files(c), hostname: s.pod.Name}
	if s.env.net != nil && !started.IsZero() {
		p.net = s.env.net
		p.netKey = fmt.Sprintf("%s/%s/%s/%d", s.pod.UID, s.pod.Name, c.Name, started.UnixNano())
	}
	p.argv = argvOf(img, c.Command, c.Args, env)
	if s.pod.Annotations[failureAnnotation] == "crash-loop" {
		return run{exit: 1, lines: []outLine{{text: "simulated failure: exit 1 (" + failureAnnotation + ": crash-loop)"}}}, p
	}
	return s.env.run(p), p
}

// ending is when the running container stops, if it does: it exits, it is
// OOMKilled, or a failing liveness or startup probe kills it.
func (s *podSim) ending(c *corev1.Container, r run, p containerProc, started time.Time, fieldPath string) (end time.Time, code int, reason, msg string) {
	if r.startError != "" {
		return started, 128, "StartError", "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: " + r.startError + ": unknown"
	}
	if s.pod.Annotations[failureAnnotation] == "oom-killed" || oomKilled(c, p.image, r.memory) {
		return started.Add(oomAfter), 137, "OOMKilled", ""
	}
	if !r.forever {
		reason := "Completed"
		if r.exit != 0 {
			reason = "Error"
		}
		end, code = started.Add(r.after), r.exit
		if r.exit == 0 && r.after == 0 {
			end = started.Add(time.Second) // a short program still runs a moment
		}
		if ks, ok := s.probeKill(c, r, p, started, fieldPath); ok && ks.Before(end) {
			return ks, 137, "Error", ""
		}
		return end, code, reason, ""
	}
	if ks, ok := s.probeKill(c, r, p, started, fieldPath); ok {
		return ks, 137, "Error", ""
	}
	return time.Time{}, 0, "", ""
}

// probeKill is when a failing liveness (or startup) probe gets the
// container killed.
func (s *podSim) probeKill(c *corev1.Container, r run, p containerProc, started time.Time, fieldPath string) (time.Time, bool) {
	for _, pr := range []struct {
		kind  string
		probe *corev1.Probe
	}{{"Startup", c.StartupProbe}, {"Liveness", c.LivenessProbe}} {
		if pr.probe == nil {
			continue
		}
		at, msg, ok := firstFailure(pr.probe, c, r, p, s.pod.Status.PodIP)
		if !ok {
			continue
		}
		threshold := max(pr.probe.FailureThreshold, 1)
		period := probePeriod(pr.probe)
		kill := started.Add(at + time.Duration(threshold-1)*period)
		if !started.Add(at).After(s.env.now) {
			s.event(fieldPath, corev1.EventTypeWarning, "Unhealthy", pr.kind+" probe failed: "+msg)
			if !kill.After(s.env.now) {
				s.event(fieldPath, corev1.EventTypeNormal, "Killing", fmt.Sprintf("Container %s failed %s probe, will be restarted", c.Name, strings.ToLower(pr.kind)))
			}
		}
		return kill, true
	}
	return time.Time{}, false
}

// ready decides the readiness of a running container now.
func (s *podSim) ready(c *corev1.Container, r run, p containerProc, started time.Time, fieldPath string) bool {
	up := s.env.now.Sub(started)
	if c.StartupProbe != nil {
		if up < time.Duration(c.StartupProbe.InitialDelaySeconds)*time.Second {
			s.at(started.Add(time.Duration(c.StartupProbe.InitialDelaySeconds) * time.Second))
			return false
		}
	}
	pr := c.ReadinessProbe
	if pr == nil {
		return true
	}
	delay := time.Duration(pr.InitialDelaySeconds) * time.Second
	if up < delay {
		s.at(started.Add(delay))
		return false
	}
	ok, msg := probeAt(pr, c, r, p, up, s.pod.Status.PodIP)
	if pr.Exec != nil || !ok {
		s.later(probePeriod(pr))
	}
	if !ok {
		s.event(fieldPath, corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: "+msg)
	}
	return ok
}

func probePeriod(p *corev1.Probe) time.Duration {
	if p.PeriodSeconds <= 0 {
		return 10 * time.Second
	}
	return time.Duration(p.PeriodSeconds) * time.Second
}

// firstFailure is the offset in the container's life of the first failing
// probe, if one fails.
func firstFailure(pr *corev1.Probe, c *corev1.Container, r run, p containerProc, podIP string) (time.Duration, string, bool) {
	delay := time.Duration(pr.InitialDelaySeconds) * time.Second
	if pr.Exec == nil {
		ok, msg := probeAt(pr, c, r, p, delay, podIP)
		return delay, msg, !ok
	}
	period := probePeriod(pr)
	for t := delay; t <= horizon && (r.forever || t < r.after); t += period {
		if ok, msg := probeAt(pr, c, r, p, t, podIP); !ok {
			return t, msg, true
		}
		if t > delay+1000*period {
			break
		}
	}
	return 0, "", false
}

// probeAt runs a probe at offset t of the container's life.
func probeAt(pr *corev1.Probe, c *corev1.Container, r run, p containerProc, t time.Duration, podIP string) (bool, string) {
	if pr.Exec != nil {
		code, out := probeExec(p, r.fs, t, pr.Exec.Command)
		if code == 0 {
			return true, ""
		}
		return false, strings.TrimSpace(out)
	}
	var port intstr.IntOrString
	switch {
	case pr.HTTPGet != nil:
		port = pr.HTTPGet.Port
	case pr.TCPSocket != nil:
		port = pr.TCPSocket.Port
	case pr.GRPC != nil:
		port = intstr.FromInt32(pr.GRPC.Port)
	default:
		return true, ""
	}
	n, ok := containerPort(c, port)
	if !ok {
		return false, fmt.Sprintf("strconv.Atoi: parsing %q: invalid syntax", port.String())
	}
	if slices.Contains(r.listens, n) {
		if pr.HTTPGet != nil {
			if code, _ := r.serves[n].answer(pr.HTTPGet.Path); code >= 400 {
				return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", code)
			}
		}
		return true, ""
	}
	refused := fmt.Sprintf("dial tcp %s:%d: connect: connection refused", podIP, n)
	switch {
	case pr.HTTPGet != nil:
		scheme := strings.ToLower(string(pr.HTTPGet.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		return false, fmt.Sprintf("Get %q: %s", fmt.Sprintf("%s://%s:%d%s", scheme, podIP, n, pr.HTTPGet.Path), refused)
	case pr.GRPC != nil:
		return false, fmt.Sprintf("timeout: failed to connect service %q within 1s: %s", fmt.Sprintf("%s:%d", podIP, n), refused)
	}
	return false, refused
}

// containerPort resolves a probe's port: a number, or the name of one of
// the container's ports.
func containerPort(c *corev1.Container, port intstr.IntOrString) (int32, bool) {
	if port.Type == intstr.Int {
		return port.IntVal, true
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return int32(n), true
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

// oomKilled: the container's memory limit is below what its image needs
// plus what its program wrote into memory (dd).
func oomKilled(c *corev1.Container, img *Image, written int64) bool {
	if img == nil {
		return false
	}
	limit, ok := c.Resources.Limits[corev1.ResourceMemory]
	return ok && limit.Value() < img.Memory.Value()+written
}

// containerEnv resolves a container's environment as the kubelet does; a
// reference to a missing ConfigMap, Secret or key is the error of
// CreateContainerConfigError.
func (s *podSim) containerEnv(c *corev1.Container) (map[string]string, string) {
	ns := s.pod.Namespace
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, ok := s.env.configMap(ns, from.ConfigMapRef.Name)
			if !ok {
				if optional(from.ConfigMapRef.Optional) {
					continue
				}
				return nil, fmt.Sprintf("configmap %q not found", from.ConfigMapRef.Name)
			}
			for k, v := range cm.Data {
				env[from.Prefix+k] = v
			}
		case from.SecretRef != nil:
			sec, ok := s.env.secret(ns, from.SecretRef.Name)
			if !ok {
				if optional(from.SecretRef.Optional) {
					continue
				}
				return nil, fmt.Sprintf("secret %q not found", from.SecretRef.Name)
			}
			for k, v := range sec.Data {
				env[from.Prefix+k] = string(v)
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expandVars(e.Value, env)
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, ok := s.env.configMap(ns, ref.Name)
			if !ok {
				if optional(ref.Optional) {
					continue
				}
				return nil, fmt.Sprintf("configmap %q not found", ref.Name)
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				if optional(ref.Optional) {
					continue
				}
				return nil, fmt.Sprintf("couldn't find key %s in ConfigMap %s/%s", ref.Key, ns, ref.Name)
			}
			env[e.Name] = v
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			sec, ok := s.env.secret(ns, ref.Name)
			if !ok {
				if optional(ref.Optional) {
					continue
				}
				return nil, fmt.Sprintf("secret %q not found", ref.Name)
			}
			v, ok := sec.Data[ref.Key]
			if !ok {
				if optional(ref.Optional) {
					continue
				}
				return nil, fmt.Sprintf("couldn't find key %s in Secret %s/%s", ref.Key, ns, ref.Name)
			}
			env[e.Name] = string(v)
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				env[e.Name] = s.pod.Name
			case "metadata.namespace":
				env[e.Name] = ns
			case "spec.nodeName":
				env[e.Name] = s.pod.Spec.NodeName
			case "status.podIP":
				env[e.Name] = s.pod.Status.PodIP
			case "status.hostIP":
				env[e.Name] = s.env.hostIP
			case "spec.serviceAccountName":
				env[e.Name] = s.pod.Spec.ServiceAccountName
			}
		}
	}
	return env, ""
}

func optional(b *bool) bool { return b != nil && *b }

// missingVolume says why a volume of the pod cannot be mounted, if one
// cannot: a ConfigMap, Secret or key it needs is missing.
func (s *podSim) missingVolume() string {
	ns := s.pod.Namespace
	for _, v := range s.pod.Spec.Volumes {
		type source struct {
			kind, name string
			items      []corev1.KeyToPath
			optional   *bool
		}
		var srcs []source
		if v.ConfigMap != nil {
			srcs = append(srcs, source{"configmap", v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional})
		}
		if v.Secret != nil {
			srcs = append(srcs, source{"secret", v.Secret.SecretName, v.Secret.Items, v.Secret.Optional})
		}
		if v.Projected != nil {
			for _, p := range v.Projected.Sources {
				if p.ConfigMap != nil {
					srcs = append(srcs, source{"configmap", p.ConfigMap.Name, p.ConfigMap.Items, p.ConfigMap.Optional})
				}
				if p.Secret != nil {
					srcs = append(srcs, source{"secret", p.Secret.Name, p.Secret.Items, p.Secret.Optional})
				}
			}
		}
		for _, src := range srcs {
			var keys map[string]bool
			if src.kind == "configmap" {
				cm, ok := s.env.configMap(ns, src.name)
				if ok {
					keys = map[string]bool{}
					for k := range cm.Data {
						keys[k] = true
					}
					for k := range cm.BinaryData {
						keys[k] = true
					}
				}
			} else if sec, ok := s.env.secret(ns, src.name); ok {
				keys = map[string]bool{}
				for k := range sec.Data {
					keys[k] = true
				}
			}
			if keys == nil {
				if optional(src.optional) {
					continue
				}
				return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %s %q not found", v.Name, src.kind, src.name)
			}
			for _, it := range src.items {
				if !keys[it.Key] && !optional(src.optional) {
					return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %s references non-existent config key: %s", v.Name, src.kind, it.Key)
				}
			}
		}
	}
	return ""
}

// files are what the container's ConfigMap and Secret mounts show: the
// ConfigMaps' data, and the Secrets' keys (their values are not
// simulated: the files are empty).
func (s *podSim) files(c *corev1.Container) map[string]string {
	out := map[string]string{}
	if img, _ := s.env.images.Lookup(c.Image); img != nil {
		maps.Copy(out, img.Files)
	}
	s.sharedFiles(c, out)
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(s.pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			continue
		}
		v := s.pod.Spec.Volumes[i]
		// Each source is a ConfigMap's or Secret's keys, with the items
		// that rename them; a projected volume holds several.
		type source struct {
			data  map[string]string
			items []corev1.KeyToPath
		}
		var sources []source
		configMap := func(name string, items []corev1.KeyToPath) {
			if cm, ok := s.env.configMap(s.pod.Namespace, name); ok {
				data := maps.Clone(cm.Data)
				for k, b := range cm.BinaryData {
					data[k] = string(b)
				}
				sources = append(sources, source{data, items})
			}
		}
		secret := func(name string, items []corev1.KeyToPath) {
			if sec, ok := s.env.secret(s.pod.Namespace, name); ok {
				data := map[string]string{}
				for k, b := range sec.Data {
					data[k] = string(b)
				}
				sources = append(sources, source{data, items})
			}
		}
		switch {
		case v.ConfigMap != nil:
			configMap(v.ConfigMap.Name, v.ConfigMap.Items)
		case v.Secret != nil:
			secret(v.Secret.SecretName, v.Secret.Items)
		case v.Projected != nil:
			for _, ps := range v.Projected.Sources {
				switch {
				case ps.ConfigMap != nil:
					configMap(ps.ConfigMap.Name, ps.ConfigMap.Items)
				case ps.Secret != nil:
					secret(ps.Secret.Name, ps.Secret.Items)
				}
			}
		default:
			continue
		}
		if m.SubPath == "" {
			// A volume mounted on a directory hides what the image has
			// there (a ConfigMap on /etc/nginx/conf.d: no default.conf).
			dir := strings.TrimSuffix(path.Clean(m.MountPath), "/") + "/"
			for p := range out {
				if strings.HasPrefix(p, dir) {
					delete(out, p)
				}
			}
		}
		for _, src := range sources {
			names := map[string]string{}
			for k := range src.data {
				names[k] = k
			}
			if len(src.items) > 0 {
				names = map[string]string{}
				for _, it := range src.items {
					names[it.Key] = it.Path
				}
			}
			for k, p := range names {
				if m.SubPath != "" {
					if p == m.SubPath {
						out[m.MountPath] = src.data[k]
					}
					continue
				}
				out[path.Join(m.MountPath, p)] = src.data[k]
			}
		}
	}
	return out
}

// sharedFiles adds, under each emptyDir c mounts, the files the other
// containers' images ship under their mount of it (nginx's access.log,
// seen from a sidecar that mounts its log directory).
func (s *podSim) sharedFiles(c *corev1.Container, out map[string]string) {
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(s.pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 || s.pod.Spec.Volumes[i].EmptyDir == nil {
			continue
		}
		for _, other := range slices.Concat(s.pod.Spec.InitContainers, s.pod.Spec.Containers) {
			if other.Name == c.Name {
				continue
			}
			img, _ := s.env.images.Lookup(other.Image)
			if img == nil {
				continue
			}
			for _, om := range other.VolumeMounts {
				if om.Name != m.Name {
					continue
				}
				prefix := strings.TrimSuffix(om.MountPath, "/") + "/"
				for p, content := range img.Files {
					if rest, ok := strings.CutPrefix(p, prefix); ok {
						out[path.Join(m.MountPath, rest)] = content
					}
				}
			}
		}
	}
}

func (s *podSim) backOff(restarts int32) time.Duration {
	if restarts == 0 {
		return 0
	}
	d := s.env.backOff
	for i := int32(1); i < restarts && d < maxBackOff; i++ {
		d *= 2
	}
	return min(d, maxBackOff)
}

func (s *podSim) event(fieldPath, eventType, reason, message string) {
	s.res.events = append(s.res.events, simEvent{fieldPath, eventType, reason, message})
}

// at asks for an evaluation at t; later in d.
func (s *podSim) at(t time.Time) {
	if !t.After(s.env.now) {
		t = s.env.now.Add(100 * time.Millisecond)
	}
	if s.res.next.IsZero() || t.Before(s.res.next) {
		s.res.next = t
	}
}

func (s *podSim) later(d time.Duration) { s.at(s.env.now.Add(d)) }

// readiness sets ContainersReady and Ready.
func (s *podSim) readiness(st *corev1.PodStatus, now metav1.Time) {
	var unready []string
	for _, c := range st.ContainerStatuses {
		if !c.Ready {
			unready = append(unready, c.Name)
		}
	}
	if st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed {
		setCondition(st, corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted", "", now)
		setCondition(st, corev1.PodReady, corev1.ConditionFalse, "PodCompleted", "", now)
		return
	}
	if len(unready) == 0 {
		setCondition(st, corev1.ContainersReady, corev1.ConditionTrue, "", "", now)
		setCondition(st, corev1.PodReady, corev1.ConditionTrue, "", "", now)
		return
	}
	msg := fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	setCondition(st, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", msg, now)
	setCondition(st, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", msg, now)
}

// phase follows the kubelet's getPhase.
func phase(pod *corev1.Pod, st *corev1.PodStatus, initialized, initFailed bool) corev1.PodPhase {
	if initFailed {
		return corev1.PodFailed
	}
	if !initialized {
		return corev1.PodPending
	}
	var running, waiting, stopped, succeeded int
	for _, c := range st.ContainerStatuses {
		switch {
		case c.State.Running != nil:
			running++
		case c.State.Terminated != nil:
			stopped++
			if c.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case c.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case pod.Spec.RestartPolicy == corev1.RestartPolicyAlways:
		return corev1.PodRunning
	case stopped == succeeded:
		return corev1.PodSucceeded
	case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
		return corev1.PodFailed
	default:
		return corev1.PodRunning
	}
}

func findStatus(sts []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range sts {
		if sts[i].Name == name {
			return &sts[i]
		}
	}
	return nil
}

func waiting(c *corev1.Container, prev *corev1.ContainerStatus, reason, msg string) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: new(bool),
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	if prev != nil {
		cs.RestartCount, cs.LastTerminationState = prev.RestartCount, prev.LastTerminationState
	}
	return cs
}

func waitingAll(cs []corev1.Container, prev []corev1.ContainerStatus, reason, msg string) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for i := range cs {
		out = append(out, waiting(&cs[i], findStatus(prev, cs[i].Name), reason, msg))
	}
	return out
}

func unfinished(sts []corev1.ContainerStatus) []string {
	var out []string
	for _, c := range sts {
		if c.State.Terminated == nil || c.State.Terminated.ExitCode != 0 {
			out = append(out, c.Name)
		}
	}
	return out
}

func condition(st *corev1.PodStatus, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func boolCondition(b bool) corev1.ConditionStatus {
	if b {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

// setCondition sets a condition, keeping its transition time when its
// status does not change.
func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, status corev1.ConditionStatus, reason, msg string, now metav1.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = status, reason, msg
		return
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: now})
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// fakeDigest is a stable digest for an image reference.
func fakeDigest(ref string) string {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(ref); i++ {
		h ^= uint64(ref[i])
		h *= 1099511628211
	}
	return strings.Repeat(fmt.Sprintf("%016x", h), 4)
}

// firstOr is the first of ss, or def when there is none.
func firstOr(ss []string, def string) string {
	if len(ss) == 0 {
		return def
	}
	return ss[0]
}

// limitOf is a container's memory limit as written, or "none".
func limitOf(c *corev1.Container) string {
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		return q.String()
	}
	return "none"
}
