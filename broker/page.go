package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/catalog"
)

// ApprovalOptions configure the approval page: where people approve or
// deny plans, out of the model's reach. A nil *ApprovalOptions means
// defaults.
type ApprovalOptions struct {
	// URL is the page's public address ("http://127.0.0.1:7411/approvals"),
	// for links. Its path is where the handler serves.
	URL string
	// Authenticate, when set, makes people sign in with a bearer token
	// (the same check as MCP requests): decisions are theirs. Nil means a
	// local server: one-time links printed to Announce open the page, as
	// LocalUser.
	Authenticate func(ctx context.Context, token string) (*catalog.Caller, error)
	// Announce receives a line for each plan waiting for approval, with its
	// link (one-time, without Authenticate): the server's stderr, which the
	// person running it reads and the model does not. Nil means os.Stderr.
	Announce io.Writer
	// LocalUser names whoever opens a one-time link, or uses the CLI key,
	// in decisions. Zero means "local:" and the OS user's name.
	LocalUser string
	// CLIKey, when set, is a bearer secret the CLI (kubecode plans,
	// approve, deny) presents as LocalUser; without Authenticate only.
	CLIKey string
	// ApproverGroups, with Authenticate, are the groups whose members may
	// decide on plans (a signed-in user outside them is refused). Nil
	// means any person the cluster authenticates.
	ApproverGroups []string
	// NoLinks keeps one-time links out of Announce: for a log others can
	// read (a pod's, which a script may fetch with pods.logs). People then
	// approve with the CLI key, or the server needs Authenticate.
	NoLinks bool
}

// approvalPage serves the approval page and its JSON API.
type approvalPage struct {
	b    *Broker
	opts ApprovalOptions
	base *url.URL
	path string // the base path, without a trailing slash

	mu   sync.Mutex
	keys map[string]linkKey // one-time link keys
}

// linkKey is what a one-time link opens: one plan, until it expires.
type linkKey struct {
	plan    string
	expires time.Time
}

// approvalHandler returns the approval page's handler, to be served at
// opts.URL's path, and makes the broker name it wherever a plan waits for
// approval (tool results, URL elicitations, the log). HTTPHandler and
// ApprovalPageHandler serve it behind their Host checks.
func (b *Broker) approvalHandler(opts *ApprovalOptions) (*approvalPage, error) {
	pg := &approvalPage{b: b, keys: map[string]linkKey{}}
	if opts != nil {
		pg.opts = *opts
	}
	u, err := url.Parse(pg.opts.URL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("the approval page needs an absolute URL, not %q", pg.opts.URL)
	}
	pg.base, pg.path = u, strings.TrimSuffix(u.Path, "/")
	if pg.opts.Announce == nil {
		pg.opts.Announce = os.Stderr
	}
	if pg.opts.LocalUser == "" {
		name := os.Getenv("USER")
		if name == "" {
			name = "user"
		}
		pg.opts.LocalUser = "local:" + name
	}
	b.pageMu.Lock()
	b.page = pg
	b.pageMu.Unlock()
	return pg, nil
}

func (b *Broker) approvalPage() *approvalPage {
	b.pageMu.Lock()
	defer b.pageMu.Unlock()
	return b.page
}

// planURL is plan id's page, without credentials.
func (pg *approvalPage) planURL(id string) string {
	u := *pg.base
	u.Path = pg.path + "/" + url.PathEscape(id)
	return u.String()
}

// link is plan id's page with a one-time key when people have no token
// to sign in with.
func (pg *approvalPage) link(id string) string {
	if pg.opts.Authenticate != nil {
		return pg.planURL(id)
	}
	key := rand.Text()
	pg.mu.Lock()
	now := time.Now()
	for k, lk := range pg.keys {
		if now.After(lk.expires) {
			delete(pg.keys, k)
		}
	}
	if len(pg.keys) < maxLinkKeys {
		pg.keys[key] = linkKey{plan: id, expires: now.Add(linkTTL)}
	}
	pg.mu.Unlock()
	return pg.planURL(id) + "?key=" + key
}

// linkTTL is how long a one-time link opens the page; maxLinkKeys bounds
// the unused ones.
const (
	linkTTL     = 30 * time.Minute
	maxLinkKeys = 1000
)

// announce tells the person running the server that a plan waits.
func (pg *approvalPage) announce(pd *bridge.Pending) {
	if pg.opts.NoLinks && pg.opts.Authenticate == nil {
		fmt.Fprintf(pg.opts.Announce, "kubecode: plan %s (%d change(s)) waits for approval: run `kubecode approve %s` where the server runs (its log is no place for a link)\n",
			pd.ID, pd.Changes, pd.ID)
		return
	}
	fmt.Fprintf(pg.opts.Announce, "kubecode: plan %s (%d change(s)) waits for approval: open %s or run `kubecode approve %s`\n",
		pd.ID, pd.Changes, pg.link(pd.ID), pd.ID)
}

// session is a signed-in approver, as its cookie holds it.
type session struct {
	By string `json:"by"`
	// Verified says By signed in with a token the cluster accepted.
	Verified bool `json:"v,omitempty"`
	// Plan, for a session a one-time link opened, is the one plan it
	// may see and decide.
	Plan    string    `json:"plan,omitempty"`
	Expires time.Time `json:"exp"`
}

const (
	cookieName  = "kubecode_approver"
	sealPurpose = "approval-page"
	sessionTTL  = 8 * time.Hour
)

func (pg *approvalPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, pg.path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	rest = strings.Trim(rest, "/")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "same-origin") // browsers then send the page's Origin with its forms
	if api, ok := strings.CutPrefix(rest, "api/"); ok || rest == "api" {
		pg.serveAPI(w, r, api)
		return
	}
	if rest == "signin" {
		pg.signin(w, r)
		return
	}
	if key := r.URL.Query().Get("key"); key != "" && r.Method == http.MethodGet {
		pg.redeem(w, r, key)
		return
	}
	ses, ok := pg.signedIn(r)
	if !ok {
		pg.askSignIn(w, r)
		return
	}
	who := ses.By
	id, action, _ := strings.Cut(rest, "/")
	if ses.Plan != "" && id != ses.Plan { // a link opens its own plan only
		if id == "" && r.Method == http.MethodGet {
			http.Redirect(w, r, pg.path+"/"+ses.Plan, http.StatusSeeOther)
			return
		}
		pg.page(w, http.StatusForbidden, "Not this link's plan", "The link you opened is for plan "+ses.Plan+" only; each plan's link is in the server's log.", map[string]any{"Who": who})
		return
	}
	switch {
	case r.Method == http.MethodGet && id == "":
		pg.list(w, r, who)
	case r.Method == http.MethodGet && action == "":
		pg.show(w, r, who, id, "")
	case r.Method == http.MethodPost && (action == "approve" || action == "deny"):
		if err := r.ParseForm(); err != nil || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(pg.csrf(r))) != 1 {
			http.Error(w, "Forbidden: the form is stale or not this page's; reload the page", http.StatusForbidden)
			return
		}
		_, err := pg.b.bridge.Decide(r.Context(), id, bridge.Decision{By: who, Channel: bridge.ChannelPage, Approve: action == "approve", Verified: ses.Verified})
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		pg.show(w, r, who, id, msg)
	default:
		http.Error(w, "Not found: the page lists plans at "+pg.path+"/ and shows one at "+pg.path+"/ID", http.StatusNotFound)
	}
}

// redeem exchanges a one-time link's key for a session cookie.
func (pg *approvalPage) redeem(w http.ResponseWriter, r *http.Request, key string) {
	pg.mu.Lock()
	lk, ok := pg.keys[key]
	delete(pg.keys, key)
	pg.mu.Unlock()
	if !ok || time.Now().After(lk.expires) || pg.opts.Authenticate != nil {
		pg.page(w, http.StatusForbidden, "Link used or expired", "This link opened the page once already, or it expired. Each plan's announcement in the server's log (stderr) has a fresh link.", nil)
		return
	}
	pg.setSession(w, r, session{By: pg.opts.LocalUser, Plan: lk.plan, Expires: lk.expires})
	http.Redirect(w, r, pg.path+"/"+lk.plan, http.StatusSeeOther)
}

func (pg *approvalPage) setSession(w http.ResponseWriter, r *http.Request, s session) {
	raw, _ := json.Marshal(s)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: pg.b.bridge.Seal(sealPurpose, raw), Path: pg.path + "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || pg.base.Scheme == "https", MaxAge: int(time.Until(s.Expires) / time.Second)})
}

// signedIn returns the session the request's cookie holds.
func (pg *approvalPage) signedIn(r *http.Request) (session, bool) {
	var s session
	c, err := r.Cookie(cookieName)
	if err != nil {
		return s, false
	}
	raw, ok := pg.b.bridge.Unseal(sealPurpose, c.Value)
	if !ok || json.Unmarshal(raw, &s) != nil || s.By == "" || time.Now().After(s.Expires) {
		return session{}, false
	}
	return s, true
}

// csrf is the form token of the request's session: only a page that
// read it can post a decision.
func (pg *approvalPage) csrf(r *http.Request) string {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte("kubecode-csrf\x00" + c.Value))
	return hex.EncodeToString(sum[:16])
}

func (pg *approvalPage) askSignIn(w http.ResponseWriter, r *http.Request) {
	if pg.opts.Authenticate == nil {
		pg.page(w, http.StatusUnauthorized, "Open the link from the server's log",
			"This page opens with a one-time link: kubecode prints one for each plan waiting for approval on its standard error (your terminal, or your MCP client's server log).", nil)
		return
	}
	pg.page(w, http.StatusUnauthorized, "Sign in", "Approvals are made by people with their own Kubernetes identity: paste a bearer token the cluster accepts (kubectl create token, or your OIDC token).",
		map[string]any{"SignIn": true, "Next": r.URL.Path})
}

// signin checks a pasted bearer token as MCP requests are checked.
func (pg *approvalPage) signin(w http.ResponseWriter, r *http.Request) {
	if pg.opts.Authenticate == nil || r.Method != http.MethodPost {
		http.Redirect(w, r, pg.path+"/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "Bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	c, err := pg.opts.Authenticate(r.Context(), strings.TrimSpace(r.PostForm.Get("token")))
	if err != nil || c == nil || c.User == "" {
		pg.page(w, http.StatusUnauthorized, "Sign in", "The Kubernetes API server does not accept this token. Paste a token it accepts.", map[string]any{"SignIn": true, "Next": r.PostForm.Get("next")})
		return
	}
	if why := pg.notAnApprover(c); why != "" {
		pg.page(w, http.StatusForbidden, "Sign in", why, map[string]any{"SignIn": true, "Next": r.PostForm.Get("next")})
		return
	}
	pg.setSession(w, r, session{By: c.User, Verified: true, Expires: time.Now().Add(sessionTTL)})
	next := path.Clean("/" + r.PostForm.Get("next"))
	if !strings.HasPrefix(next, pg.path+"/") || strings.ContainsAny(next, "\\") {
		next = pg.path + "/"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// planView is a plan as the page shows it.
type planView struct {
	*bridge.Pending
	State   string
	Expired bool
}

func (pg *approvalPage) view(p *bridge.Pending) planView {
	return planView{Pending: p, State: p.State(), Expired: time.Now().After(p.Expires)}
}

func (pg *approvalPage) list(w http.ResponseWriter, r *http.Request, who string) {
	plans, err := pg.b.bridge.PendingPlans(r.Context())
	if err != nil {
		pg.page(w, http.StatusBadGateway, "Plans are unavailable", err.Error(), nil)
		return
	}
	views := make([]planView, len(plans))
	for i, p := range plans {
		views[i] = pg.view(p)
	}
	pg.page(w, http.StatusOK, "Plans waiting for approval", "", map[string]any{"Who": who, "Plans": views, "Base": pg.path})
}

func (pg *approvalPage) show(w http.ResponseWriter, r *http.Request, who, id, msg string) {
	p, err := pg.b.bridge.Pending(r.Context(), id)
	if err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, bridge.ErrNoPlan) {
			status = http.StatusNotFound
			err = fmt.Errorf("no plan %s is waiting here: check the id; plans are kept until a while after they expire", id)
		}
		pg.page(w, status, "Unknown plan", err.Error(), map[string]any{"Who": who, "Base": pg.path})
		return
	}
	pg.page(w, http.StatusOK, "Plan "+p.ID, msg, map[string]any{"Who": who, "Plan": pg.view(p), "CSRF": pg.csrf(r), "Base": pg.path})
}

func (pg *approvalPage) page(w http.ResponseWriter, status int, title, msg string, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	data["Title"], data["Message"], data["Base"] = title, msg, pg.path
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = pageTemplate.Execute(w, data)
}

// serveAPI is the CLI's JSON API: GET api/plans, GET api/plans/ID, POST
// api/plans/ID/approve|deny, with a bearer token (a user's, or CLIKey).
func (pg *approvalPage) serveAPI(w http.ResponseWriter, r *http.Request, path string) {
	w.Header().Set("Content-Type", "application/json")
	fail := func(status int, msg string) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	token = strings.TrimSpace(token)
	if !ok || token == "" {
		fail(http.StatusUnauthorized, "send a bearer token: your Kubernetes token, or the local server's CLI key")
		return
	}
	var who string
	verified := false
	if pg.opts.Authenticate != nil {
		c, err := pg.opts.Authenticate(r.Context(), token)
		if err != nil || c == nil || c.User == "" {
			fail(http.StatusUnauthorized, "the Kubernetes API server does not accept this token")
			return
		}
		if why := pg.notAnApprover(c); why != "" {
			fail(http.StatusForbidden, why)
			return
		}
		who, verified = c.User, true
	} else {
		if pg.opts.CLIKey == "" || subtle.ConstantTimeCompare([]byte(token), []byte(pg.opts.CLIKey)) != 1 {
			fail(http.StatusUnauthorized, "this is not the server's CLI key: run the CLI as the user running the server, or pass --server and --token")
			return
		}
		who = pg.opts.LocalUser
	}
	rest, _ := strings.CutPrefix(path, "plans")
	rest = strings.Trim(rest, "/")
	id, action, _ := strings.Cut(rest, "/")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	type apiPlan struct {
		*bridge.Pending
		Token string `json:"token,omitempty"` // never sent
		State string `json:"state"`
	}
	switch {
	case r.Method == http.MethodGet && id == "":
		plans, err := pg.b.bridge.PendingPlans(r.Context())
		if err != nil {
			fail(http.StatusBadGateway, err.Error())
			return
		}
		out := make([]apiPlan, len(plans))
		for i, p := range plans {
			out[i] = apiPlan{Pending: p, State: p.State()}
		}
		_ = enc.Encode(map[string]any{"approver": who, "plans": out})
	case r.Method == http.MethodGet && action == "":
		p, err := pg.b.bridge.Pending(r.Context(), id)
		if err != nil {
			fail(http.StatusNotFound, fmt.Sprintf("no plan %s is waiting here", id))
			return
		}
		_ = enc.Encode(apiPlan{Pending: p, State: p.State()})
	case r.Method == http.MethodPost && (action == "approve" || action == "deny"):
		p, err := pg.b.bridge.Decide(r.Context(), id, bridge.Decision{By: who, Channel: bridge.ChannelCLI, Approve: action == "approve", Verified: verified})
		if err != nil {
			fail(http.StatusConflict, err.Error())
			return
		}
		_ = enc.Encode(apiPlan{Pending: p, State: p.State()})
	default:
		fail(http.StatusNotFound, "the API serves GET plans, GET plans/ID and POST plans/ID/approve|deny")
	}
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"shown": func(s string) string { v, _ := visible(s); return v }, "when": func(t time.Time) string { return t.UTC().Format(time.RFC3339) }, "pretty": func(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return visibleLines(string(raw))
	}
	return visibleLines(b.String())
}}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{{.Title}} · kubecode</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#1d232a}
pre{background:#f4f6f8;padding:1rem;overflow-x:auto;white-space:pre-wrap;border-radius:6px}
.state{font-weight:600}.pending{color:#9a6700}.approved{color:#1a7f37}.denied{color:#cf222e}
button{font:inherit;padding:.4rem 1.2rem;margin-right:.6rem;border-radius:6px;border:1px solid #888;cursor:pointer}
.approve{background:#1a7f37;color:#fff}.deny{background:#cf222e;color:#fff}
.msg{padding:.6rem 1rem;background:#fff8c5;border-radius:6px}
</style></head><body>
<h1>{{.Title}}</h1>
{{if .Who}}<p>Signed in as <b id="who">{{.Who}}</b>. <a href="{{.Base}}/">All plans</a></p>{{end}}
{{if .Message}}<p class="msg" id="message">{{.Message}}</p>{{end}}
{{if .SignIn}}<form method="post" action="{{.Base}}/signin"><input type="hidden" name="next" value="{{.Next}}">
<label>Bearer token <input type="password" name="token" size="60" autocomplete="off"></label> <button type="submit">Sign in</button></form>{{end}}
{{with .Plans}}<table><tr><th>Plan</th><th>For</th><th>Changes</th><th>State</th><th>Expires</th></tr>
{{range .}}<tr><td><a href="{{$.Base}}/{{.ID}}">{{.ID}}</a></td><td>{{if .User}}{{shown .User}}{{else}}(server){{end}}</td><td>{{.Changes}}</td><td class="state {{.State}}">{{.State}}</td><td>{{when .Expires}}</td></tr>
{{end}}</table>{{else}}{{if .Who}}{{if not .Plan}}<p>No plan waits for approval.</p>{{end}}{{end}}{{end}}
{{with .Plan}}
<p>State: <span class="state {{.State}}" id="state">{{.State}}</span>{{if .Expired}} (expired){{end}} · for {{if .User}}{{shown .User}}{{else}}the server's identity{{end}} · expires {{when .Expires}}{{if gt .Approvers 1}} · needs {{.Approvers}} approvers ({{shown .Why}}){{end}}</p>
<pre id="plan">{{.Text}}</pre>
{{range $i, $c := .Calls}}<details class="call"><summary>{{$c.Op}} {{shown $c.Object}}: the full call</summary><pre>{{pretty $c.Arguments}}</pre></details>
{{end}}
{{with .Decisions}}<ul id="decisions">{{range .}}<li>{{if .Approve}}approved{{else}}denied{{end}} by {{shown .By}} ({{.Channel}}, {{when .At}}){{if .Self}} — self-approval{{end}}</li>{{end}}</ul>{{end}}
{{if and (eq .State "pending") (not .Expired)}}
<form method="post" action="{{$.Base}}/{{.ID}}/approve" style="display:inline"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button class="approve" id="approve" type="submit">Approve</button></form>
<form method="post" action="{{$.Base}}/{{.ID}}/deny" style="display:inline"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button class="deny" id="deny" type="submit">Deny</button></form>
{{end}}{{end}}
</body></html>
`))

// notAnApprover says why an identity may not decide on plans, or "":
// approvals are made by people — a workload's ServiceAccount token (one a
// script's pod could hold) is not one — and, when ApproverGroups are set,
// by their members. Every channel that knows who answers applies it: the
// page, the CLI and elicitation (Broker.notAnApprover).
func (pg *approvalPage) notAnApprover(c *catalog.Caller) string {
	var groups []string
	if pg != nil {
		groups = pg.opts.ApproverGroups
	}
	return notAnApprover(c, groups)
}

// notAnApprover says why caller c may not decide on plans when only
// members of groups may (none: any person), or "".
func notAnApprover(c *catalog.Caller, groups []string) string {
	u := c.User
	if strings.HasPrefix(u, "system:serviceaccount:") || strings.HasPrefix(u, "system:node:") || u == "system:anonymous" || slices.Contains(c.Groups, "system:serviceaccounts") || slices.Contains(c.Groups, "system:nodes") {
		return u + " is a workload's identity, not a person's: sign in with your own token"
	}
	if len(groups) > 0 && !slices.ContainsFunc(c.Groups, func(x string) bool { return slices.Contains(groups, x) }) {
		return u + " is in none of the groups that approve plans (" + strings.Join(groups, ", ") + ")"
	}
	return ""
}
