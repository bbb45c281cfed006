package kubernetes

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
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
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return auditID{rt} })
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
	var hidden int
	ended := res.ExitCode != nil
	res.Stdout, hidden = secrets.scrub(outText, !ended)
	res.Hidden += hidden
	res.Stderr, hidden = secrets.scrub(errText, !ended)
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

func (s *secretValues) add(raw, what string) {
	v := strings.TrimSpace(raw)
	if v == "" {
		return
	}
	seen := map[string]bool{}
	put := func(form, how string) {
		if form != "" && !seen[form] { // the plainest name of a form wins
			seen[form] = true
			s.values = append(s.values, secretValue{form, what + how})
		}
	}
	put(v, "")
	if len(v) < minSecretValue {
		return
	}
	// The encodings a command prints a value in: base64 (of the stored
	// bytes and of the trimmed value, padded or not, standard or URL-safe,
	// and its inner groups, which stay the same at any offset in a longer
	// text), JSON, URL and hex.
	for _, b := range []string{raw, v} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			e := enc.EncodeToString([]byte(b))
			put(e, " (base64)")
			put(strings.TrimRight(e, "="), " (base64)")
			if len(e) > 12 {
				put(e[:len(e)-4], " (base64)") // its end changes with what follows
			}
			for off := 1; off <= 2; off++ {
				if inner := enc.EncodeToString([]byte("\x00\x00"[:off] + b)); len(inner) > 12 {
					// Drop the groups the prefix and the end change.
					put(inner[4:len(inner)-4], " (base64)")
				}
			}
		}
	}
	if j, err := json.Marshal(v); err == nil {
		put(string(j[1:len(j)-1]), " (JSON)")
	}
	put(url.QueryEscape(v), " (URL-encoded)")
	put(url.PathEscape(v), " (URL-encoded)")
	put(hex.EncodeToString([]byte(v)), " (hex)")
	// A value of several lines (a key, a certificate, an env file)
	// printed in part: each line, and each key=value's value, is a value
	// of its own.
	if strings.Contains(v, "\n") {
		for _, l := range strings.Split(v, "\n") {
			l = strings.TrimSpace(l)
			if len(l) >= minSecretValue {
				put(l, "")
			}
			for _, sep := range []string{"=", ": "} {
				if _, val, ok := strings.Cut(l, sep); ok {
					if val = strings.Trim(strings.TrimSpace(val), `"'`); len(val) >= minSecretValue {
						put(val, "")
					}
				}
			}
		}
	}
}

// scrub takes every value out of text, and the tokens that look like a
// service account's. Matches are found on the text as it came, merged where
// they overlap, and replaced once (a value that contains another, or two
// that overlap, leave nothing of either). cut says the text ended before
// the command did, so a value's start at its end is taken out too.
func (s *secretValues) scrub(text string, cut bool) (string, int) {
	type span struct {
		from, to int
		what     string
	}
	var spans []span
	for _, v := range s.values {
		if len(v.value) < minSecretValue {
			re := regexp.MustCompile(`\b` + regexp.QuoteMeta(v.value) + `\b`)
			for _, m := range re.FindAllStringIndex(text, -1) {
				spans = append(spans, span{m[0], m[1], v.what})
			}
			continue
		}
		for i := 0; ; {
			j := strings.Index(text[i:], v.value)
			if j < 0 {
				break
			}
			spans = append(spans, span{i + j, i + j + len(v.value), v.what})
			i += j + 1
		}
		if cut {
			for k := len(v.value) - 1; k >= minSecretValue; k-- {
				if strings.HasSuffix(text, v.value[:k]) {
					spans = append(spans, span{len(text) - k, len(text), v.what})
					break
				}
			}
		}
	}
	for _, m := range jwtRE.FindAllStringIndex(text, -1) {
		spans = append(spans, span{m[0], m[1], "a token"})
	}
	if len(spans) == 0 {
		return text, 0
	}
	slices.SortStableFunc(spans, func(a, b span) int { return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(b.to, a.to)) })
	var b strings.Builder
	n, at := 0, 0
	for i := 0; i < len(spans); {
		from, to, what := spans[i].from, spans[i].to, spans[i].what
		for i++; i < len(spans) && spans[i].from < to; i++ {
			to = max(to, spans[i].to)
		}
		b.WriteString(text[at:from])
		b.WriteString("[hidden: " + what + "]")
		at, n = to, n+1
	}
	b.WriteString(text[at:])
	return b.String(), n
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
