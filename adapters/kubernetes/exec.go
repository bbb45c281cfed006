package kubernetes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/catalog/secrets"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
)

// pods.exec: a command run in a container through the API server's
// pods/exec, as kubectl exec runs it. It is a change (a command may change
// anything the container can reach): planned with the pod, container and
// exact argv for a person to approve, unless the policy lists the argv
// among its reads. Its output is bounded and scrubbed of every value of
// the Secrets the pod references before it leaves the adapter.

// Bounds of one exec.
const (
	maxExecOutput  = 1 << 20 // per stream
	maxExecStdin   = 1 << 20
	maxExecArgv    = 64 << 10 // bytes of argv
	maxExecArgs    = 1024
	defaultExecTTL = 30 * time.Second
	maxExecTTL     = 5 * time.Minute
)

type execArgs struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Container string   `json:"container"`
	Command   []string `json:"command"`
	Stdin     *string  `json:"stdin"`
	Timeout   float64  `json:"timeout"`
}

// execResult is what pods.exec returns.
type execResult struct {
	Container string `json:"container"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	// ExitCode is nil when the command did not end: it timed out, or its
	// output passed the bound and the stream was closed.
	ExitCode  *int `json:"exitCode,omitempty"`
	TimedOut  bool `json:"timedOut,omitempty"`
	Truncated bool `json:"truncated,omitempty"`
	// Hidden counts the Secret values taken out of the output.
	Hidden int `json:"hidden,omitempty"`
}

// describeExec fills the descriptor of pods.exec.
func describeExec(op *catalog.Operation) {
	op.Description = "Run a command in a pod's container, as kubectl exec does: argv (no shell unless you run one), optional stdin; returns stdout, stderr and exitCode. A change: planned with the exact argv for a person to approve, unless the policy lists the command as a read (execReads). Output is bounded (1 MiB a stream) and known forms of Secret values are hidden; a command in a container that mounts or takes env from a Secret is always planned."
	op.Input = &catalog.Schema{Type: "object", Required: []string{"name", "command"}, Properties: map[string]*catalog.Schema{
		"name":      prop("string", "the pod"),
		"namespace": prop("string", "defaults to the context's namespace"),
		"container": prop("string", "defaults to the pod's default container (kubectl.kubernetes.io/default-container), else its first"),
		"command":   {Type: "array", Items: &catalog.Schema{Type: "string"}, Description: `argv, e.g. ["cat", "/etc/nginx/nginx.conf"] or ["wget", "-qO-", "http://web"]; a shell only when you need one: ["sh", "-c", "…"]`},
		"stdin":     prop("string", "written to the command's standard input (up to 1 MiB)"),
		"timeout":   prop("number", "seconds before the command is left running and the call returns (default 30, at most 300)"),
	}}
	op.Output = &catalog.Schema{Type: "object", Required: []string{"container", "stdout", "stderr"}, Properties: map[string]*catalog.Schema{
		"container": prop("string", "the container it ran in"),
		"stdout":    prop("string", ""),
		"stderr":    prop("string", ""),
		"exitCode":  prop("integer", "absent when the command did not end (timedOut, truncated)"),
		"timedOut":  prop("boolean", "the timeout passed before the command ended"),
		"truncated": prop("boolean", "a stream passed 1 MiB: the rest was not read"),
		"hidden":    prop("integer", "how many Secret values were taken out of the output"),
	}}
	op.OutputName = "ExecResult"
	op.Keywords = append(op.Keywords, "exec", "kubectl exec", "run a command in a container", "shell", "cat a file in a pod", "wget from a pod", "curl from a pod", "test connectivity")
	op.Annotations = catalog.Annotations{Command: "command", CommandInput: "stdin"}
}

// decodeExec checks an exec's arguments.
func (a *Adapter) decodeExec(raw json.RawMessage) (execArgs, time.Duration, error) {
	var args execArgs
	if err := decodeArgs(raw, &args); err != nil {
		return args, 0, err
	}
	if args.Namespace == "" {
		args.Namespace = a.ns
	}
	if args.Name == "" || len(args.Command) == 0 || args.Command[0] == "" {
		return args, 0, badRequest(`pods.exec needs name and command: tools.kubernetes.pods.exec({ name: "web-0", command: ["cat", "/etc/nginx/nginx.conf"] })`)
	}
	if len(args.Command) > maxExecArgs {
		return args, 0, badRequest("command has %d arguments: at most %d", len(args.Command), maxExecArgs)
	}
	size := 0
	for i, arg := range args.Command {
		size += len(arg)
		if strings.ContainsRune(arg, 0) || !utf8.ValidString(arg) {
			return args, 0, badRequest("command[%d] holds a NUL byte or invalid UTF-8: an argv element is a plain string", i)
		}
	}
	if size > maxExecArgv {
		return args, 0, badRequest("command is %d bytes: at most %d (pass data as stdin)", size, maxExecArgv)
	}
	if args.Stdin != nil && len(*args.Stdin) > maxExecStdin {
		return args, 0, badRequest("stdin is %d bytes: at most %d", len(*args.Stdin), maxExecStdin)
	}
	ttl := defaultExecTTL
	switch {
	case args.Timeout < 0:
		return args, 0, badRequest("timeout is %v: give seconds, at most %d", args.Timeout, int(maxExecTTL.Seconds()))
	case args.Timeout > maxExecTTL.Seconds():
		return args, 0, badRequest("timeout is %v seconds: at most %d", args.Timeout, int(maxExecTTL.Seconds()))
	case args.Timeout > 0:
		ttl = time.Duration(args.Timeout * float64(time.Second))
	}
	return args, ttl, nil
}

// execPod finds the pod and the container an exec runs in, running.
func (a *Adapter) execPod(ctx context.Context, args *execArgs) (*corev1.Pod, error) {
	pod, err := a.core.CoreV1().Pods(args.Namespace).Get(ctx, args.Name, metav1.GetOptions{})
	if err != nil {
		return nil, wrapError(err)
	}
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	if args.Container == "" {
		args.Container = names[0]
		if d := pod.Annotations["kubectl.kubernetes.io/default-container"]; slices.Contains(names, d) {
			args.Container = d
		}
	}
	if !slices.Contains(names, args.Container) {
		return nil, &catalog.CallError{Status: http.StatusBadRequest, Reason: "BadRequest", Message: fmt.Sprintf("pod %s/%s has no container %q: it has %s", args.Namespace, args.Name, args.Container, strings.Join(names, ", "))}
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name != args.Container {
			continue
		}
		if st.State.Running == nil {
			why := "not started"
			switch {
			case st.State.Waiting != nil:
				why = "waiting: " + st.State.Waiting.Reason
			case st.State.Terminated != nil:
				why = "terminated: " + st.State.Terminated.Reason
			}
			return nil, &catalog.CallError{Status: http.StatusBadRequest, Reason: "BadRequest", Message: fmt.Sprintf("container %s of pod %s/%s is not running (%s): a command runs only in a running container; read its logs (previous: true) instead", args.Container, args.Namespace, args.Name, why)}
		}
		return pod, nil
	}
	return nil, &catalog.CallError{Status: http.StatusBadRequest, Reason: "BadRequest", Message: fmt.Sprintf("container %s of pod %s/%s has not started (pod %s)", args.Container, args.Namespace, args.Name, pod.Status.Phase)}
}

// previewExec plans an exec: the pod, the container, the exact argv.
// Nothing runs.
func (a *Adapter) previewExec(ctx context.Context, raw json.RawMessage) (*catalog.Change, json.RawMessage, error) {
	args, ttl, err := a.decodeExec(raw)
	if err != nil {
		return nil, nil, err
	}
	pod, err := a.execPod(ctx, &args)
	if err != nil {
		return nil, nil, err
	}
	argv := argvJSON(args.Command)
	c := &catalog.Change{Action: "exec", Kind: "Pod", Namespace: args.Namespace, Name: args.Name, Existed: true,
		Validated: "a command has no dry run, only its container was found running",
		Diff:      []string{fmt.Sprintf("runs in container %s: %s", args.Container, argv)},
		Fields:    []catalog.Field{{Path: "container", Before: "(none)", After: args.Container}, {Path: "command", Before: "(none)", After: argv}},
		// A pod recreated under the same name is another pod: the plan
		// binds this one.
		Fingerprint: string(pod.UID) + "/" + args.Container,
	}
	if args.Stdin != nil {
		c.Diff = append(c.Diff, fmt.Sprintf("with %d bytes on stdin", len(*args.Stdin)))
		c.Fields = append(c.Fields, catalog.Field{Path: "stdin", Before: "(none)", After: *args.Stdin})
		sum := sha256.Sum256([]byte(*args.Stdin))
		c.Fingerprint += "/" + hex.EncodeToString(sum[:8])
	}
	c.Diff = append(c.Diff, fmt.Sprintf("for at most %s; output bounded, known forms of Secret values hidden (as written, base64, hex, escaped): a command can transform them", ttl))
	if shell := runsShell(args.Command); shell != "" {
		c.Diff = append(c.Diff, "⚠ runs a shell ("+shell+"): what it does is in its script, not in the argv")
	}
	mentions := secretMentions(pod, args.Container, args.Command)
	for _, w := range mentions {
		c.Diff = append(c.Diff, "⚠ "+w)
	}
	if c.SecretAccess = secretAccess(pod, args.Container, args.Command); c.SecretAccess != "" && len(mentions) == 0 {
		c.Diff = append(c.Diff, "⚠ "+c.SecretAccess+": what the command prints may depend on Secret values, so it is never run as a read")
	}
	preview, err := json.Marshal(execResult{Container: args.Container})
	if err != nil {
		return nil, nil, err
	}
	if kubeapi.SystemNamespace(args.Namespace) {
		c.Critical = "the " + args.Namespace + " namespace holds the cluster's own components: a command there runs inside them"
	}
	return c, preview, nil
}

// secretMentions says where argv names a Secret the container uses: a
// mount path or an environment variable filled from one. The output is
// scrubbed of the values, not of what a command makes of them (base32,
// rev, one character at a time), so the reviewer should know.
func secretMentions(pod *corev1.Pod, container string, argv []string) []string {
	line := strings.Join(argv, " ")
	var out []string
	for _, c := range pod.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, m := range c.VolumeMounts {
			for _, v := range pod.Spec.Volumes {
				if v.Name != m.Name || (v.Secret == nil && v.Projected == nil) {
					continue
				}
				if strings.Contains(line, strings.TrimSuffix(m.MountPath, "/")) {
					out = append(out, fmt.Sprintf("the command names %s, where volume %s (Secret values) is mounted", m.MountPath, v.Name))
				}
			}
		}
		printsEnv := slices.ContainsFunc(argv, func(a string) bool {
			return a == "env" || a == "printenv" || a == "set" || a == "export" || strings.Contains(a, "/proc/") || strings.Contains(a, "environ")
		})
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && (printsEnv || strings.Contains(line, e.Name)) {
				out = append(out, fmt.Sprintf("the command may print $%s, filled from Secret %s", e.Name, e.ValueFrom.SecretKeyRef.Name))
			}
		}
		if printsEnv {
			for _, f := range c.EnvFrom {
				if f.SecretRef != nil {
					out = append(out, fmt.Sprintf("the command prints the environment, filled from Secret %s", f.SecretRef.Name))
				}
			}
		}
	}
	return out
}

// secretAccess says how a command in container can compute on Secret
// values, or "": the container mounts a Secret (or a projected one) or
// takes its environment from one, or the argv prints the environment or
// names a service account's token. Such a command is never a read: a
// grep -c of a guess answers yes or no about the value in a form no
// scrubber knows.
func secretAccess(pod *corev1.Pod, container string, argv []string) string {
	// With one process namespace, a container reads the others' files
	// through /proc/<pid>/root: any container's Secret is this one's.
	shared := pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if c.Name != container && !shared {
			continue
		}
		container := c.Name
		for _, m := range c.VolumeMounts {
			for _, v := range pod.Spec.Volumes {
				if v.Name != m.Name {
					continue
				}
				if v.Secret != nil {
					return fmt.Sprintf("container %s mounts Secret %s at %s", container, v.Secret.SecretName, m.MountPath)
				}
				if v.HostPath != nil {
					// The node's files hold every pod's Secret volumes.
					return fmt.Sprintf("container %s mounts the node's %s at %s", container, v.HostPath.Path, m.MountPath)
				}
				if v.CSI != nil {
					// A CSI driver (the Secrets Store CSI driver, Vault's)
					// mounts secrets kubecode cannot see or register.
					return fmt.Sprintf("container %s mounts a %s CSI volume at %s, which may hold secrets", container, v.CSI.Driver, m.MountPath)
				}
				if v.Projected != nil {
					for _, src := range v.Projected.Sources {
						if src.Secret != nil {
							return fmt.Sprintf("container %s mounts Secret %s at %s", container, src.Secret.Name, m.MountPath)
						}
					}
				}
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return fmt.Sprintf("container %s takes $%s from Secret %s", container, e.Name, e.ValueFrom.SecretKeyRef.Name)
			}
		}
		for _, f := range c.EnvFrom {
			if f.SecretRef != nil {
				return fmt.Sprintf("container %s takes its environment from Secret %s", container, f.SecretRef.Name)
			}
		}
	}
	for _, a := range argv {
		if strings.Contains(a, "/") {
			a = path.Clean(a) // /var/run//secrets is /var/run/secrets
		}
		switch base := path.Base(a); {
		case base == "env" || base == "printenv" || a == "set" || a == "export" || a == "declare":
			return "the command prints the environment"
		case strings.Contains(a, "environ"):
			return "the command names a process's environment (" + a + ")"
		case strings.Contains(a, "/var/run/secrets") || strings.Contains(a, "/run/secrets"):
			return "the command names " + a + ", where Secrets and service account tokens are mounted"
		}
	}
	return ""
}

// runsShell names the shell argv runs, or "".
func runsShell(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	name := argv[0][strings.LastIndex(argv[0], "/")+1:]
	if name == "busybox" || name == "env" {
		if len(argv) < 2 {
			return ""
		}
		return runsShell(argv[1:])
	}
	switch name {
	case "sh", "bash", "ash", "dash", "zsh", "ksh", "mksh", "fish", "python", "python3", "perl", "ruby", "node", "awk", "gawk", "xargs", "find":
		return name
	}
	return ""
}

// exec runs the command for real.
func (a *Adapter) exec(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	args, ttl, err := a.decodeExec(raw)
	if err != nil {
		return nil, err
	}
	pod, err := a.execPod(ctx, &args)
	if err != nil {
		return nil, err
	}
	if err := a.ensurePodSecrets(ctx, pod); err != nil {
		return nil, err
	}
	cfg := a.cfg
	if c := catalog.CallerFrom(ctx); c != nil && c.Token != "" {
		// A caller with a token of its own: its token, on a transport
		// that can upgrade the connection.
		cfg = rest.AnonymousClientConfig(a.base)
		cfg.BearerToken = c.Token
		reg := a.secrets
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return auditID{credentials{rt, reg}} })
	}
	req := a.core.CoreV1().RESTClient().Post().Resource("pods").Namespace(args.Namespace).Name(args.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: args.Container, Command: args.Command, Stdin: args.Stdin != nil, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return nil, fmt.Errorf("pods.exec: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return nil, fmt.Errorf("pods.exec: %w", err)
	}
	executor, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, fmt.Errorf("pods.exec: %w", err)
	}
	run, cancel := context.WithTimeout(ctx, ttl)
	defer cancel()
	stdout := &boundedBuffer{limit: maxExecOutput, full: cancel}
	stderr := &boundedBuffer{limit: maxExecOutput, full: cancel}
	opts := remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr}
	if args.Stdin != nil {
		opts.Stdin = strings.NewReader(*args.Stdin)
	}
	err = executor.StreamWithContext(run, opts)
	outText, outOver := stdout.result()
	errText, errOver := stderr.result()
	res := execResult{Container: args.Container}
	var ce utilexec.CodeExitError
	switch {
	case outOver || errOver:
		res.Truncated = true
	case errors.As(err, &ce):
		code := ce.Code
		res.ExitCode = &code
	case err == nil:
		code := 0
		res.ExitCode = &code
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case run.Err() != nil:
		res.TimedOut = true
	default:
		return nil, execError(err)
	}
	// The boundary hides every known value again at the bridge; here a
	// stream cut before the command ended loses a value's start at its
	// end too, and the count says what was hidden.
	var hidden []string
	ended := res.ExitCode != nil
	res.Stdout, hidden = a.secrets.Scrub(outText, !ended)
	res.Hidden += len(hidden)
	res.Stderr, hidden = a.secrets.Scrub(errText, !ended)
	res.Hidden += len(hidden)
	return json.Marshal(res)
}

// execError is a failed exec's error, with the API server's status.
func execError(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return wrapError(err)
	}
	return &catalog.CallError{Status: http.StatusBadGateway, Reason: "ExecFailed", Message: "the command could not run: " + err.Error()}
}

// boundedBuffer keeps the first limit bytes written and calls full once
// past them (the stream is closed rather than read without end). It has
// no ReadFrom, so that io.Copy goes through Write; the stream's copy may
// still write after the call returned, so String closes it to writes.
type boundedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	limit  int
	over   bool
	closed bool
	full   func()
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return len(p), nil
	}
	if room := b.limit - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:max(room, 0)])
		if !b.over {
			b.over = true
			b.full()
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// result closes the buffer and returns what it kept and whether it
// overflowed.
func (b *boundedBuffer) result() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return b.buf.String(), b.over
}

// podSecretValues reads every Secret the pod references (env, envFrom,
// volumes, projected volumes, image pull secrets), with the server's own
// identity: the values serve only to take them out of the output.
func (a *Adapter) podSecretValues(ctx context.Context, pod *corev1.Pod) (map[string][]secrets.Value, error) {
	names := map[string]bool{}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					names[e.ValueFrom.SecretKeyRef.Name] = true
				}
			}
			for _, f := range c.EnvFrom {
				if f.SecretRef != nil {
					names[f.SecretRef.Name] = true
				}
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			names[v.Secret.SecretName] = true
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					names[s.Secret.Name] = true
				}
			}
		}
	}
	for _, r := range pod.Spec.ImagePullSecrets {
		names[r.Name] = true
	}
	server := catalog.WithCaller(ctx, nil)
	out := map[string][]secrets.Value{}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		s, err := a.core.CoreV1().Secrets(pod.Namespace).Get(server, name, metav1.GetOptions{})
		if err == nil && s.Namespace == "" {
			s.Namespace = pod.Namespace
		}
		if apierrors.IsNotFound(err) {
			continue // an optional Secret that is not there holds nothing
		}
		if err != nil {
			return nil, &catalog.CallError{Status: http.StatusForbidden, Reason: "Forbidden", Message: fmt.Sprintf("pod %s/%s uses Secret %s, which kubecode cannot read (%v): its values could not be kept out of what the pod prints, so kubecode neither runs a command there nor returns its logs; ask a person to run kubectl", pod.Namespace, pod.Name, name, err)}
		}
		out[secretSource(a.base.Host, s.Namespace, s.Name)] = SecretValues(s)
	}
	return out, nil
}

// argvJSON writes argv as a JSON array, as a reviewer reads it (no HTML
// escapes).
func argvJSON(argv []string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(argv)
	return strings.TrimSuffix(b.String(), "\n")
}
