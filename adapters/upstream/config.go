package upstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kubecode/kubecode/catalog/secrets"
	"sigs.k8s.io/yaml"
)

// File is an operator's upstreams file (--upstreams FILE), YAML or JSON:
//
//	upstreams:
//	- name: files                      # its operations are tools.files.<tool>
//	  command: [node, server.js, /srv] # stdio; or  url: https://host/mcp
//	  trustAnnotations: true           # default false: every tool is a change
//	  headers: {Authorization: {fromFile: /var/run/secrets/files-token}}
//	  tools: {write_file: {kind: change}, read_file: {kind: read}}
//	  concurrency: 4
//	  timeout: 30s
type File struct {
	Upstreams []Config `json:"upstreams"`
	// Pins is the file of pinned tool declarations (kubecode upstreams
	// pin writes it), relative to the upstreams file. Empty means the
	// upstreams file's name with ".pins.json" for its extension.
	Pins string `json:"pins,omitempty"`

	path string // where the file was read from
}

// Config is one upstream MCP server.
type Config struct {
	// Name is the upstream's segment of its operations' names:
	// tools.<Name>.<tool>. Lower case letters, digits and underscores,
	// starting with a letter.
	Name string `json:"name"`
	// Command runs a stdio server: the program and its arguments. Env
	// adds variables to its environment (from files or the server's own
	// environment, never written in the file).
	Command []string          `json:"command,omitempty"`
	Env     map[string]Secret `json:"env,omitempty"`
	// URL is a streamable HTTP server's endpoint. Headers are sent with
	// every request to it.
	URL     string            `json:"url,omitempty"`
	Headers map[string]Secret `json:"headers,omitempty"`
	// TokenExchange, for a url upstream, makes each user's calls (under
	// --auth passthrough) carry a token the operator's token service
	// made for that user from theirs (RFC 8693), over a session of their
	// own; the caller's token never reaches the upstream. Calls with no
	// user (--auth none) and the tools' listing use Headers.
	TokenExchange *TokenExchange `json:"tokenExchange,omitempty"`
	// TrustAnnotations says the operator trusts the server's tool
	// annotations: a tool that says readOnlyHint is then a read. False
	// (the default) makes every tool a change, as the MCP specification
	// asks of untrusted servers.
	TrustAnnotations bool `json:"trustAnnotations,omitempty"`
	// Tools override what the server says of its tools, by tool name.
	Tools map[string]Tool `json:"tools,omitempty"`
	// Cluster, when set, names the cluster the server acts on (a
	// Kubernetes MCP server with the same cluster's credentials): its
	// reads are served, and every call that is not a read is refused,
	// since kubecode cannot judge what it does to that cluster (pod
	// security, access, namespaces) as it judges its own operations; the
	// refusal says to make the change with kubecode's operations. Zero
	// means the server acts on no cluster kubecode serves.
	Cluster string `json:"cluster,omitempty"`
	// Concurrency bounds the calls in flight to the server. Zero means 4.
	Concurrency int `json:"concurrency,omitempty"`
	// Timeout bounds one call, time waiting for a free slot included,
	// inside the execution's own deadline. Zero means 30s.
	Timeout Duration `json:"timeout,omitempty"`
}

// Tool is the operator's word on one upstream tool.
type Tool struct {
	// Kind is "read" (called without a plan) or "change" (judged and, in
	// plan mode, approved by a person), whatever the server says.
	Kind string `json:"kind,omitempty"`
	// Signals are what the autopsy flags when the tool is called: the
	// names of Signals (destructive, external-effect, ...).
	Signals []string `json:"signals,omitempty"`
	// Hidden leaves the tool out: not indexed, not callable.
	Hidden bool `json:"hidden,omitempty"`
	// Sensitive marks a tool whose arguments may hold secrets: plans show
	// none of their values (they still bind them) and the ledger keeps
	// none.
	Sensitive bool `json:"sensitive,omitempty"`
	// Inverse, when set, is the call that undoes this one: kubecode
	// revert plans it (as any change) for each call of the tool an
	// applied execution made. Nil means a call of the tool is not undone,
	// and a revert says so.
	Inverse *Inverse `json:"inverse,omitempty"`
}

// Inverse is the call that undoes a tool's call: another tool of the same
// upstream, with arguments that are literal values or "$args.KEY", the
// undone call's argument KEY (dotted for nested objects):
//
//	move_file: {inverse: {tool: move_file, args: {source: $args.destination, destination: $args.source}}}
type Inverse struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args,omitempty"`
}

// Secret is a value the bridge reads and no script sees: a file's
// contents (trimmed) or an environment variable of the server.
type Secret struct {
	FromFile string `json:"fromFile,omitempty"`
	FromEnv  string `json:"fromEnv,omitempty"`
	// Value is a setting that is no secret (a kubeconfig's path, a log
	// level), written in the file.
	Value string `json:"value,omitempty"`
}

// Duration is a time.Duration written as "30s".
type Duration time.Duration

// UnmarshalJSON reads "30s" (or a number of seconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n float64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("a duration is a string like \"30s\"")
		}
		*d = Duration(n * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: write it like \"30s\" or \"2m\"", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Limits of an upstream's settings.
const (
	DefaultConcurrency = 4
	MaxConcurrency     = 64
	DefaultTimeout     = 30 * time.Second
	MaxTimeout         = 10 * time.Minute
)

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// reservedNames are the providers kubecode has itself.
var reservedNames = []string{"kubernetes", "helm", "kubecode", "tools", "upstreams"}

// Signals an operator may declare on an upstream tool, with what the
// autopsy's flag means.
var toolSignals = map[string]string{
	SignalDestructive:    "an upstream tool the operator marked destructive was called",
	SignalExternalEffect: "an upstream tool the operator marked as acting outside (a message sent, a ticket filed) was called",
}

// Signals of upstream tools.
const (
	SignalDestructive    = "destructive"
	SignalExternalEffect = "external-effect"
)

// ReadFile reads and checks an upstreams file.
func ReadFile(path string) (*File, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--upstreams: %w", err)
	}
	f, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("--upstreams %s: %w", path, err)
	}
	f.path = path
	return f, nil
}

// Parse reads an upstreams file's contents and checks them: every
// mistake is reported with where it is.
func Parse(raw []byte) (*File, error) {
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	seen := map[string]bool{}
	for i := range f.Upstreams {
		u := &f.Upstreams[i]
		where := fmt.Sprintf("upstreams[%d]", i)
		if u.Name != "" {
			where = fmt.Sprintf("upstream %q", u.Name)
		}
		if err := u.check(); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if seen[u.Name] {
			return nil, fmt.Errorf("%s: two upstreams have this name", where)
		}
		seen[u.Name] = true
	}
	return &f, nil
}

func (u *Config) check() error {
	switch {
	case !nameRE.MatchString(u.Name):
		return fmt.Errorf("name must be lower case letters, digits and underscores, starting with a letter (at most 32): it names tools.<name>")
	case slices.Contains(reservedNames, u.Name):
		return fmt.Errorf("name %q is kubecode's own; pick another", u.Name)
	case len(u.Command) > 0 && u.URL != "":
		return fmt.Errorf("give command (stdio) or url (streamable HTTP), not both")
	case len(u.Command) == 0 && u.URL == "":
		return fmt.Errorf("give command (a stdio server: [program, args...]) or url (a streamable HTTP endpoint)")
	case u.URL != "" && !strings.HasPrefix(u.URL, "https://") && !strings.HasPrefix(u.URL, "http://"):
		return fmt.Errorf("url must be http:// or https://")
	case u.URL != "" && (strings.Contains(strings.SplitN(strings.SplitN(u.URL, "://", 2)[1], "/", 2)[0], "@") || strings.Contains(u.URL, "?")):
		return fmt.Errorf("url must carry no credentials (user:password@ or a query): give them in headers, from a file or the environment")
	case len(u.Headers) > 0 && strings.HasPrefix(u.URL, "http://") && !loopbackURL(u.URL):
		return fmt.Errorf("headers would go in clear text to %s: use https://", u.URL)
	case len(u.Headers) > 0 && u.URL == "":
		return fmt.Errorf("headers are for url upstreams; a command's credentials go in env")
	case len(u.Env) > 0 && u.URL != "":
		return fmt.Errorf("env is for command upstreams; a url's credentials go in headers")
	case u.TokenExchange != nil && u.URL == "":
		return fmt.Errorf("tokenExchange is for url upstreams (a stdio server is started once, not per user)")
	case u.TokenExchange != nil && !strings.HasPrefix(u.TokenExchange.URL, "https://") && !strings.HasPrefix(u.TokenExchange.URL, "http://"):
		return fmt.Errorf("tokenExchange.url must be the token service's http:// or https:// endpoint")
	case u.Concurrency < 0 || u.Concurrency > MaxConcurrency:
		return fmt.Errorf("concurrency must be between 1 and %d", MaxConcurrency)
	case u.Timeout < 0 || time.Duration(u.Timeout) > MaxTimeout:
		return fmt.Errorf("timeout must be between 1s and %s", MaxTimeout)
	}
	for k, s := range u.Headers {
		if err := s.check(); err != nil {
			return fmt.Errorf("headers.%s: %w", k, err)
		}
	}
	if x := u.TokenExchange; x != nil {
		for k, s := range map[string]*Secret{"clientId": x.ClientID, "clientSecret": x.ClientSecret} {
			if s != nil {
				if err := s.check(); err != nil {
					return fmt.Errorf("tokenExchange.%s: %w", k, err)
				}
			}
		}
	}
	for k, s := range u.Env {
		if err := s.check(); err != nil {
			return fmt.Errorf("env.%s: %w", k, err)
		}
	}
	for name, t := range u.Tools {
		switch t.Kind {
		case "", "read", "change":
		default:
			return fmt.Errorf("tools.%s.kind must be read or change", name)
		}
		if t.Inverse != nil && t.Inverse.Tool == "" {
			return fmt.Errorf("tools.%s.inverse.tool names no tool", name)
		}
		for _, s := range t.Signals {
			if _, ok := toolSignals[s]; !ok {
				return fmt.Errorf("tools.%s.signals: %q is none of %s", name, s, strings.Join(signalNames(), ", "))
			}
		}
	}
	if u.Concurrency == 0 {
		u.Concurrency = DefaultConcurrency
	}
	if u.Timeout == 0 {
		u.Timeout = Duration(DefaultTimeout)
	}
	return nil
}

func signalNames() []string {
	var out []string
	for k := range toolSignals {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (s Secret) check() error {
	n := 0
	for _, v := range []string{s.FromFile, s.FromEnv, s.Value} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("give one of fromFile, fromEnv (a credential, never written in the file) or value (a setting that is no secret)")
	}
	return nil
}

// register puts v, the value s read, in reg as what ("upstream files header
// Authorization"), unless s is a setting written in the file (Value),
// which is no secret.
func (s Secret) register(reg *secrets.Registry, v, what string) {
	if reg == nil || s.Value != "" || v == "" {
		return
	}
	// A value rotated in its file is a new source; the old one is kept,
	// so a result echoing the previous token loses it too.
	sum := sha256.Sum256([]byte(v))
	values := []secrets.Value{{Value: v, What: what}}
	for _, scheme := range []string{"Bearer ", "Basic ", "Token ", "token "} {
		if rest, ok := strings.CutPrefix(v, scheme); ok { // an echo of the token alone
			values = append(values, secrets.Value{Value: rest, What: what})
		}
	}
	reg.Add(what+" "+hex.EncodeToString(sum[:6]), values...)
}

// value reads the secret now (a rotated token is read afresh).
func (s Secret) value() (string, error) {
	if s.Value != "" {
		return s.Value, nil
	}
	if s.FromEnv != "" {
		v, ok := os.LookupEnv(s.FromEnv)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", s.FromEnv)
		}
		return v, nil
	}
	b, err := os.ReadFile(s.FromFile)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// PinsPath is where the file's pins are kept.
func (f *File) PinsPath() string {
	if f.Pins != "" {
		if filepath.IsAbs(f.Pins) || f.path == "" {
			return f.Pins
		}
		return filepath.Join(filepath.Dir(f.path), f.Pins)
	}
	if f.path == "" {
		return ""
	}
	return strings.TrimSuffix(f.path, filepath.Ext(f.path)) + ".pins.json"
}

// loopbackURL says whether an http:// URL's host is this machine.
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
