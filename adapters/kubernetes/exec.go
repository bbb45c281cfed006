package kubernetes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"github.com/kubecode/kubecode/catalog"
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
	op.Description = "Run a command in a pod's container, as kubectl exec does: argv (no shell unless you run one), optional stdin; returns stdout, stderr and exitCode. A change: planned with the exact argv for a person to approve, unless the policy lists the command as a read (execReads). Output is bounded (1 MiB a stream) and scrubbed of the values of the Secrets the pod uses."
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
	op.Annotations = catalog.Annotations{Command: "command"}
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
	case args.Timeout > 0:
		ttl = time.Duration(args.Timeout * float64(time.Second))
	}
	if ttl > maxExecTTL {
		return args, 0, badRequest("timeout is %v seconds: at most %d", args.Timeout, int(maxExecTTL.Seconds()))
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
	c.Diff = append(c.Diff, fmt.Sprintf("for at most %s; output bounded and scrubbed of the pod's Secret values", ttl))
	for _, w := range secretMentions(pod, args.Container, args.Command) {
		c.Diff = append(c.Diff, "⚠ "+w)
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
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && strings.Contains(line, e.Name) {
				out = append(out, fmt.Sprintf("the command names $%s, filled from Secret %s", e.Name, e.ValueFrom.SecretKeyRef.Name))
			}
		}
		if len(c.EnvFrom) > 0 && slices.ContainsFunc(argv, func(a string) bool { return a == "env" || a == "printenv" || strings.Contains(a, "/proc/") }) {
			for _, f := range c.EnvFrom {
				if f.SecretRef != nil {
					out = append(out, fmt.Sprintf("the command prints the environment, filled from Secret %s", f.SecretRef.Name))
				}
			}
		}
	}
	return out
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
	secrets, err := a.podSecretValues(ctx, pod)
	if err != nil {
		return nil, err
	}
	cfg := a.cfg
	if c := catalog.CallerFrom(ctx); c != nil && c.Token != "" {
		// A caller with a token of its own: its token, on a transport
		// that can upgrade the connection.
		cfg = rest.AnonymousClientConfig(a.base)
		cfg.BearerToken = c.Token
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
	res := execResult{Container: args.Container}
	var ce utilexec.CodeExitError
	switch {
	case stdout.over || stderr.over:
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
	var hidden int
	res.Stdout, hidden = secrets.scrub(stdout.String(), res.Truncated)
	res.Hidden += hidden
	res.Stderr, hidden = secrets.scrub(stderr.String(), res.Truncated)
	res.Hidden += hidden
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
// no ReadFrom, so that io.Copy goes through Write.
type boundedBuffer struct {
	buf   bytes.Buffer
	limit int
	over  bool
	full  func()
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
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

func (b *boundedBuffer) String() string { return b.buf.String() }

// secretValues are the values an exec's output must not carry, each with
// what it is.
type secretValues struct {
	values []secretValue
}

type secretValue struct {
	value, what string
}

// minSecretValue: values shorter than this are taken out only as whole
// words (a Secret holding "1" would otherwise blank every digit).
const minSecretValue = 4

// jwtRE matches a JSON Web Token (a service account's among them).
var jwtRE = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)

// podSecretValues reads every Secret the pod references (env, envFrom,
// volumes, projected volumes, image pull secrets), with the server's own
// identity: the values serve only to take them out of the output.
func (a *Adapter) podSecretValues(ctx context.Context, pod *corev1.Pod) (*secretValues, error) {
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
	out := &secretValues{}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		s, err := a.core.CoreV1().Secrets(pod.Namespace).Get(server, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // an optional Secret that is not there holds nothing
		}
		if err != nil {
			return nil, &catalog.CallError{Status: http.StatusForbidden, Reason: "Forbidden", Message: fmt.Sprintf("pod %s/%s uses Secret %s, which kubecode cannot read (%v): its values could not be kept out of the output, so the command was not run; ask a person to run kubectl exec", pod.Namespace, pod.Name, name, err)}
		}
		for k, v := range s.Data {
			out.add(string(v), fmt.Sprintf("Secret %s key %s", name, k))
		}
	}
	sort.Slice(out.values, func(i, j int) bool { return len(out.values[i].value) > len(out.values[j].value) })
	return out, nil
}

func (s *secretValues) add(v, what string) {
	v = strings.TrimSpace(v)
	if v == "" {
		return
	}
	s.values = append(s.values, secretValue{v, what})
	if len(v) >= minSecretValue {
		s.values = append(s.values, secretValue{base64.StdEncoding.EncodeToString([]byte(v)), what + " (base64)"})
		// A value of several lines (a key, a certificate) printed in
		// part: each long line is a value of its own.
		if strings.Contains(v, "\n") {
			for _, l := range strings.Split(v, "\n") {
				if l = strings.TrimSpace(l); len(l) >= 16 {
					s.values = append(s.values, secretValue{l, what})
				}
			}
		}
	}
}

// scrub takes every value out of text, and the tokens that look like a
// service account's; cut says text was truncated, so a value's start at
// its end is taken out too.
func (s *secretValues) scrub(text string, cut bool) (string, int) {
	n := 0
	for _, v := range s.values {
		mark := "[hidden: " + v.what + "]"
		if len(v.value) < minSecretValue {
			re := regexp.MustCompile(`\b` + regexp.QuoteMeta(v.value) + `\b`)
			if re.MatchString(text) {
				n += len(re.FindAllStringIndex(text, -1))
				text = re.ReplaceAllLiteralString(text, mark)
			}
			continue
		}
		if c := strings.Count(text, v.value); c > 0 {
			n += c
			text = strings.ReplaceAll(text, v.value, mark)
		}
		if cut {
			for k := len(v.value) - 1; k >= minSecretValue; k-- {
				if strings.HasSuffix(text, v.value[:k]) {
					text = text[:len(text)-k] + mark
					n++
					break
				}
			}
		}
	}
	text = jwtRE.ReplaceAllStringFunc(text, func(string) string { n++; return "[hidden: a token]" })
	return text, n
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
