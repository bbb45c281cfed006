package controlplane

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// Attach: the kubelet's /attach endpoint for pods of the simulated nodes,
// so that `kubectl attach` and `kubectl run -i` show what a container's
// process prints as it prints it. The process's life is simulated when it
// starts, so its standard input is not read.

// attachPoll is how often an attach looks for what the process printed
// since, and whether it ended.
const attachPoll = 200 * time.Millisecond

// serveAttach serves GET and POST /attach/{namespace}/{pod}/{container}
// ?input=1&output=1&error=1&tty=0.
func (k *Kubelet) serveAttach(w http.ResponseWriter, r *http.Request) {
	t, opts, ok := k.streamTarget(w, r)
	if !ok {
		return
	}
	remotecommand.ServeAttach(w, r, t, t.pod.Name, string(t.pod.UID), t.container.Name, opts, execIdleTimeout, execStreamsDeadline, remotecommand.SupportedStreamingProtocols)
}

// AttachContainer writes what the container's process printed so far, then
// each line as its simulated life reaches it, until the process ends, the
// pod goes, or the client does. Its standard input is not read (the
// simulation decided the process's life when it started).
func (t *execTarget) AttachContainer(ctx context.Context, _ string, _ string, container string, _ io.Reader, out, errOut io.WriteCloser, _ bool, _ <-chan remotecommand.TerminalSize) error {
	w := io.Writer(out)
	if out == nil {
		w = errOut
	}
	if w == nil {
		w = io.Discard
	}
	ctx, cancel := context.WithTimeout(ctx, execHoldLimit)
	defer cancel()
	// What was sent: lines up to the time of the last one, and how many
	// of those at that very time (a server's log drops its oldest lines,
	// so counting all of them would stall).
	var last time.Time
	atLast := 0
	for {
		running, previous, gone := t.whereIs(container)
		if !gone {
			lines, err, _ := t.n.logs(t.pod.Namespace, t.pod.Name, container, previous)
			if err == nil {
				same := 0
				for _, l := range lines {
					if l.at.Before(last) {
						continue
					}
					if l.at.Equal(last) {
						if same++; same <= atLast {
							continue
						}
					}
					if _, err := fmt.Fprintln(w, l.text); err != nil {
						return nil // the client went
					}
					if !l.at.Equal(last) {
						last, atLast, same = l.at, 0, 1
					}
					atLast = same
				}
			}
		}
		if !running {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(attachPoll):
		}
	}
}

// whereIs says where the container instance the target found is: still
// running; ended (its logs are the previous ones once another started);
// or gone (the pod, or its instance, is).
func (t *execTarget) whereIs(container string) (running, previous, gone bool) {
	pod, _ := t.n.pod(t.pod.Namespace, t.pod.Name)
	if pod == nil || pod.UID != t.pod.UID {
		return false, false, true
	}
	i := slices.IndexFunc(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == container })
	if i < 0 {
		return false, false, true
	}
	st := pod.Status.ContainerStatuses[i]
	switch {
	case st.State.Running != nil && st.State.Running.StartedAt.Time.Equal(t.started):
		return true, false, false
	case st.State.Terminated != nil && st.State.Terminated.StartedAt.Time.Equal(t.started):
		return false, false, false
	case st.LastTerminationState.Terminated != nil && st.LastTerminationState.Terminated.StartedAt.Time.Equal(t.started):
		return false, true, false
	}
	return false, false, true
}
