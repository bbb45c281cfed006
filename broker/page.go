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
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	// People, without Authenticate, lets people decide as themselves
	// beside the CLI key: a bearer token it authenticates (a person's the
	// cluster knows, not a ServiceAccount's) makes a verified decision
	// in that person's name, so that two of them can approve a plan that
	// needs two. Nil means the CLI key only.
	People func(ctx context.Context, token string) (*catalog.Caller, error)
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
	if rest == "link" && r.Method == http.MethodPost {
		pg.redeem(w, r)
		return
	}
	if key := r.URL.Query().Get("key"); key != "" && r.Method == http.MethodGet {
		pg.openLink(w, key)
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
		what := "plan " + ses.Plan
		if ses.Plan == runbooksPath {
			what = "the runbooks"
		}
		pg.page(w, http.StatusForbidden, "Not this link's plan", "The link you opened is for "+what+" only. For plan "+id+", run `kubecode plans "+id+" --link` where the server runs, or decide in that terminal with `kubecode approve "+id+"` or `kubecode deny "+id+" --reason …`.", map[string]any{"Who": who, "LinkSession": true})
		return
	}
	if id == runbooksPath {
		pg.runbooksPage(w, r, ses, action)
		return
	}
	switch {
	case r.Method == http.MethodGet && id == "":
		pg.list(w, r, who)
	case r.Method == http.MethodGet && action == "":
		pg.show(w, r, ses, id, "")
	case r.Method == http.MethodPost && (action == "approve" || action == "deny"):
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(pg.csrf(r))) != 1 {
			http.Error(w, "Forbidden: the form is stale or not this page's; reload the page", http.StatusForbidden)
			return
		}
		_, err := pg.b.bridge.Decide(r.Context(), id, bridge.Decision{By: who, Channel: bridge.ChannelPage, Approve: action == "approve", Verified: ses.Verified, Reason: r.PostForm.Get("reason")})
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		pg.show(w, r, ses, id, msg)
	default:
		http.Error(w, "Not found: the page lists plans at "+pg.path+"/ and shows one at "+pg.path+"/ID", http.StatusNotFound)
	}
}

// openLink answers a one-time link: a form that opens the plan. Only the
// form's POST uses the link up (redeem): a link preview or a second look
// that only reads it does not.
func (pg *approvalPage) openLink(w http.ResponseWriter, key string) {
	pg.mu.Lock()
	lk, ok := pg.keys[key]
	pg.mu.Unlock()
	if !ok || time.Now().After(lk.expires) || pg.opts.Authenticate != nil {
		pg.usedLink(w)
		return
	}
	what := "plan " + lk.plan
	if lk.plan == runbooksPath {
		what = "the runbooks"
	}
	pg.page(w, http.StatusOK, "Open "+what, "This one-time link opens "+what+" in this browser, once. It expires at "+lk.expires.UTC().Format(time.RFC3339)+".",
		map[string]any{"LinkKey": key, "LinkPlan": what})
}

// usedLink says a one-time link opens nothing, and how to get another.
func (pg *approvalPage) usedLink(w http.ResponseWriter) {
	pg.page(w, http.StatusForbidden, "Link used or expired",
		"This link opened a plan once already, or it expired. Get another where the server runs: `kubecode plans ID --link` (`kubecode plans` lists the plans), or decide there with `kubecode approve ID` or `kubecode deny ID --reason …`.", nil)
}

// redeem exchanges a one-time link's key, posted by openLink's form, for
// a session cookie.
func (pg *approvalPage) redeem(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "Bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	key := r.PostForm.Get("key")
	pg.mu.Lock()
	lk, ok := pg.keys[key]
	delete(pg.keys, key)
	pg.mu.Unlock()
	if !ok || time.Now().After(lk.expires) || pg.opts.Authenticate != nil {
		pg.usedLink(w)
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
		how := "kubecode prints one for each plan waiting for approval on its standard error when that is a terminal, and `kubecode plans ID --link` prints a new one where the server runs"
		pg.page(w, http.StatusUnauthorized, "Open a plan's one-time link",
			"This page opens with a one-time link: "+how+". You can also decide in that terminal: `kubecode plans` lists the plans, `kubecode approve ID` and `kubecode deny ID --reason …` decide.", nil)
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
	State   string // where it stands (Pending.Standing)
	Summary string // "1 to create, 2 to change, 0 to delete; pods: 3 rolled, 1 stopped"
	Revert  string // the execution a revert plan reverts
	// CannotApprove says why the person reading the page cannot approve
	// the plan ("" when they can): no Approve button is shown then.
	CannotApprove string
	// WillNotLast counts the changes something in the cluster will undo
	// (a line of Review.After says "will not last").
	WillNotLast int
	// Hidden marks the changes (by index) whose text holds characters a
	// person cannot see or that reorder what follows: shown as escapes,
	// with a warning first.
	Hidden map[int]bool
}

func (pg *approvalPage) view(p *bridge.Pending) planView {
	v := planView{Pending: p, State: p.Standing(time.Now()), Hidden: map[int]bool{}}
	var create, change, del, calls, commands int
	var pods catalog.Pods
	for i, c := range p.Calls {
		texts := append([]string{c.Object, c.Review.Impact}, c.Lines...)
		texts = append(texts, c.Review.Warnings...)
		texts = append(texts, c.Review.After...)
		if slices.ContainsFunc(c.Review.After, catalog.Undone) {
			v.WillNotLast++
		}
		for _, t := range c.Review.Tables {
			texts = append(append(texts, t.Object), t.Lines...)
			for _, f := range t.Fields {
				texts = append(texts, f.Path, f.Before, f.After)
			}
		}
		for _, t := range texts {
			if _, escaped := visible(t); escaped {
				v.Hidden[i] = true
			}
		}
		create, change, del, calls, commands = create+c.Review.Create, change+c.Review.Change, del+c.Review.Delete, calls+c.Review.Calls, commands+c.Review.Commands
		pods.Add(c.Review.Pods)
		if c.Review.RevertOf != "" {
			v.Revert = c.Review.RevertOf
		}
	}
	// Commands and tool calls are calls, not objects: said apart, and
	// nothing is "to change" when they are all a plan holds.
	var said []string
	if commands > 0 {
		said = append(said, fmt.Sprintf("%d command(s) to run in containers", commands))
	}
	if calls > 0 {
		said = append(said, fmt.Sprintf("%d upstream tool call(s)", calls))
	}
	switch {
	case len(said) == 0:
		v.Summary = fmt.Sprintf("%d to create, %d to change, %d to delete", create, change, del)
	case create+change+del == 0:
		v.Summary = strings.Join(said, ", ") + "; no object created, changed or deleted"
	default:
		v.Summary = fmt.Sprintf("%d to create, %d to change, %d to delete in the cluster; ", create, change, del) + strings.Join(said, ", ")
	}
	var ps []string
	for _, x := range []struct {
		n    int64
		verb string
	}{{pods.Rolled, "replaced"}, {pods.Stopped, "stopped"}, {pods.Started, "started"}} {
		if x.n > 0 {
			ps = append(ps, fmt.Sprintf("%d %s", x.n, x.verb))
		}
	}
	if len(ps) > 0 {
		v.Summary += "; pods: " + strings.Join(ps, ", ")
	}
	return v
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
	pg.page(w, http.StatusOK, "Plans", "", map[string]any{"Who": who, "Plans": views, "Base": pg.path})
}

func (pg *approvalPage) show(w http.ResponseWriter, r *http.Request, ses session, id, msg string) {
	data := map[string]any{"Who": ses.By, "Base": pg.path, "LinkSession": ses.Plan != ""}
	p, err := pg.b.bridge.Pending(r.Context(), id)
	if err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, bridge.ErrNoPlan) {
			status = http.StatusNotFound
			err = fmt.Errorf("no plan %s is waiting here: check the id; plans are kept until a while after they expire", id)
		}
		pg.page(w, status, "Unknown plan", err.Error(), data)
		return
	}
	v := pg.view(p)
	// A seat that cannot approve the plan does not offer to, and says why.
	v.CannotApprove = pg.b.bridge.CannotApprove(p, bridge.Decision{By: ses.By, Channel: bridge.ChannelPage, Approve: true, Verified: ses.Verified})
	data["Plan"], data["CSRF"] = v, pg.csrf(r)
	title := "Plan " + p.ID
	if v := data["Plan"].(planView); v.Revert != "" {
		title = "Revert plan " + p.ID
	}
	pg.page(w, http.StatusOK, title, msg, data)
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
	var caller *catalog.Caller
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
		who, verified, caller = c.User, true, c
	} else if pg.opts.CLIKey != "" && subtle.ConstantTimeCompare([]byte(token), []byte(pg.opts.CLIKey)) == 1 {
		who = pg.opts.LocalUser
	} else if pg.opts.People != nil {
		// A person as themselves: verified, so one of two for a plan
		// that needs two. They act with the server's identity.
		c, err := pg.opts.People(r.Context(), token)
		if err != nil || c == nil || c.User == "" {
			fail(http.StatusUnauthorized, "this is neither the server's CLI key nor a token the Kubernetes API server accepts: run the CLI as the user running the server, or pass your own token with --token")
			return
		}
		if why := pg.notAnApprover(c); why != "" {
			fail(http.StatusForbidden, why)
			return
		}
		who, verified = c.User, true
		// They decide; they run nothing: a script or a dry run would act
		// with the server's identity on their word.
		if path == "exec" || strings.HasSuffix(path, "/preview") {
			fail(http.StatusForbidden, who+" decides on plans and standard changes here with their own token; scripts and dry runs run with the server's user (kubecode without --token)")
			return
		}
	} else {
		fail(http.StatusUnauthorized, "this is not the server's CLI key: run the CLI as the user running the server, or pass --server and --token")
		return
	}
	if path == "exec" && r.Method == http.MethodPost {
		pg.exec(w, r, who, verified, caller)
		return
	}
	if strings.HasPrefix(path, "runbooks") || strings.HasPrefix(path, "standard/") {
		pg.serveRunbooks(w, r, path, who, verified, caller)
		return
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
			out[i] = apiPlan{Pending: p, State: p.Standing(time.Now())}
		}
		_ = enc.Encode(map[string]any{"approver": who, "plans": out})
	case r.Method == http.MethodGet && action == "":
		p, err := pg.b.bridge.Pending(r.Context(), id)
		if err != nil {
			fail(http.StatusNotFound, fmt.Sprintf("no plan %s is waiting here", id))
			return
		}
		_ = enc.Encode(apiPlan{Pending: p, State: p.Standing(time.Now())})
	case r.Method == http.MethodPost && (action == "approve" || action == "deny"):
		var body struct {
			Reason string `json:"reason"`
		}
		if raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10)); len(bytes.TrimSpace(raw)) > 0 {
			if err := json.Unmarshal(raw, &body); err != nil {
				fail(http.StatusBadRequest, "the body is JSON: {\"reason\": \"…\"}: "+err.Error())
				return
			}
		}
		p, err := pg.b.bridge.Decide(r.Context(), id, bridge.Decision{By: who, Channel: bridge.ChannelCLI, Approve: action == "approve", Verified: verified, Reason: body.Reason})
		if err != nil {
			fail(http.StatusConflict, err.Error())
			return
		}
		_ = enc.Encode(apiPlan{Pending: p, State: p.Standing(time.Now())})
	case r.Method == http.MethodPost && action == "link":
		// A new one-time link, for the person at the CLI: printed to their
		// terminal, never to the server's log.
		if pg.opts.Authenticate != nil {
			fail(http.StatusBadRequest, "this server signs people in with their own token: open "+pg.planURL(id))
			return
		}
		if _, err := pg.b.bridge.Pending(r.Context(), id); err != nil {
			fail(http.StatusNotFound, fmt.Sprintf("no plan %s is waiting here", id))
			return
		}
		_ = enc.Encode(map[string]string{"link": pg.link(id)})
	default:
		fail(http.StatusNotFound, "the API serves GET plans, GET plans/ID, POST plans/ID/approve|deny|link, GET runbooks, GET runbooks/NAME, POST runbooks/NAME/preview|approve and POST standard/ID/revoke")
	}
}

func orServer(user string) string {
	if user == "" {
		return "the server's identity"
	}
	return user
}

// APIExec is what POST api/exec takes: a script the person at the CLI
// runs on this server (kubecode exec, kubecode revert), and the plan they
// approve by running it again.
type APIExec struct {
	Code           string `json:"code"`
	Approve        string `json:"approve,omitempty"`
	TimeoutSeconds int    `json:"timeoutSeconds,omitempty"`
}

// APIExecResult is its answer: the execution as the agent would read it,
// and the plan it made, if a person must approve one.
type APIExecResult struct {
	Text    string `json:"text"`
	IsError bool   `json:"isError,omitempty"`
	Plan    string `json:"plan,omitempty"`
	// Approvers is how many people the plan needs.
	Approvers int `json:"approvers,omitempty"`
}

// exec runs a script for the person at the CLI, as the server runs the
// agent's: its changes are planned and announced like any other. With
// Approve, running it again is that person's approval (recorded as
// "terminal"), and the script applies exactly the plan.
func (pg *approvalPage) exec(w http.ResponseWriter, r *http.Request, who string, verified bool, caller *catalog.Caller) {
	fail := func(status int, msg string) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
	}
	var in APIExec
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<20)).Decode(&in); err != nil || strings.TrimSpace(in.Code) == "" {
		fail(http.StatusBadRequest, "the body is JSON: {\"code\": \"…\", \"approve\": \"plan-…\"}")
		return
	}
	opts := &ExecuteOptions{Timeout: time.Duration(in.TimeoutSeconds) * time.Second, Caller: caller, Run: "cli:" + who}
	if in.Approve != "" {
		p, err := pg.b.bridge.Pending(r.Context(), in.Approve)
		if err != nil {
			fail(http.StatusNotFound, fmt.Sprintf("no plan %s is waiting here: run the script without --approve for a new plan", in.Approve))
			return
		}
		// Running a script with --approve approves the plan only if the
		// plan is this script's, made for this caller: never another's.
		plan, err := pg.b.bridge.Open(p.Token, in.Code)
		if err != nil {
			fail(http.StatusConflict, fmt.Sprintf("plan %s was not made by this script: %v. Run the script without --approve for its own plan (or approve another's with kubecode approve %s)", in.Approve, err, in.Approve))
			return
		}
		user := ""
		if caller != nil {
			user = caller.User
		}
		if plan.User != user {
			fail(http.StatusConflict, fmt.Sprintf("plan %s acts for %s, not for you: approve it with kubecode approve %s, and its own script applies it", in.Approve, orServer(plan.User), in.Approve))
			return
		}
		if p.State() == bridge.StatePending {
			if _, err := pg.b.bridge.Decide(r.Context(), in.Approve, bridge.Decision{By: who, Channel: bridge.ChannelTerminal, Approve: true, Verified: verified}); err != nil {
				fail(http.StatusConflict, err.Error())
				return
			}
		}
		opts.Approve = in.Approve
	}
	ex, err := pg.b.Execute(r.Context(), in.Code, opts)
	if err != nil {
		fail(http.StatusConflict, err.Error())
		return
	}
	// The agent's instructions are not the CLI's: the CLI says what to
	// type.
	const decides = "a person decides"
	note := ""
	if ex.Pending != nil {
		note = decides
	}
	res := executionResult(ex, note)
	out := APIExecResult{Text: res.Content[0].(*mcp.TextContent).Text, IsError: res.IsError}
	if ex.Pending != nil {
		out.Text = strings.TrimSuffix(out.Text, "\n"+decides)
		out.Plan, out.Approvers = ex.Pending.ID, ex.Pending.Approvers
	}
	_ = json.NewEncoder(w).Encode(out)
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"shown": func(s string) string { v, _ := visible(s); return v },
	"when":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"inc":   func(i int) int { return i + 1 },
	"lasts": func(s string) bool { return !catalog.Undone(s) },
	"pretty": func(raw json.RawMessage) string {
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") != nil {
			return visibleLines(string(raw))
		}
		return visibleLines(b.String())
	}}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · kubecode</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:64rem;padding:1rem;color:#1d232a}
header{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:baseline;border-bottom:1px solid #d0d7de;padding-bottom:.5rem;margin-bottom:1rem;color:#57606a}
header b{color:#1d232a}
h1{font-size:1.5rem;margin:.2rem 0 .6rem}h2{font-size:1.1rem;margin:0 0 .5rem}h3{font-size:.95rem;margin:.8rem 0 .3rem}
code,pre,td.v{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:13px}
pre{background:#f6f8fa;padding:.8rem;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere;border-radius:6px}
.summary{font-size:1.15rem;font-weight:600;padding:.6rem .9rem;border-radius:6px;background:#ddf4ff;border:1px solid #54aeff}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:.8rem 0}.meta dt{color:#57606a}.meta dd{margin:0;overflow-wrap:anywhere}
.state{font-weight:600}.pending,.draft{color:#9a6700}.standard{color:#1a7f37}.revoked{color:#cf222e}.approved,.applied{color:#1a7f37}.denied,.failed{color:#cf222e}.expired{color:#57606a}
.card{border:1px solid #d0d7de;border-radius:8px;padding:.9rem 1rem;margin:1rem 0}
.revert{background:#fbefff;border:1px solid #c297ff;padding:.6rem .9rem;border-radius:6px}
.lasts{background:#ffebe9;border-left:4px solid #cf222e;padding:.4rem .6rem;margin:.3rem 0;font-weight:600}.after{background:#ddf4ff;border-left:4px solid #54aeff;padding:.3rem .6rem;margin:.3rem 0}
.impact{font-weight:600}.warn{background:#fff8c5;border-left:4px solid #d4a72c;padding:.3rem .6rem;margin:.3rem 0}
table{border-collapse:collapse;width:100%;table-layout:fixed}th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f6f8fa}th.f{width:32%}td.old{background:#ffebe9}td.new{background:#dafbe1}td.v{white-space:pre-wrap}
.outcome{padding:.6rem .9rem;border-radius:6px;background:#dafbe1;border:1px solid #4ac26b}.outcome.failed{background:#ffebe9;border-color:#ff8182}
button{font:inherit;padding:.45rem 1.2rem;border-radius:6px;border:1px solid #888;cursor:pointer}
.approve{background:#1a7f37;color:#fff}.deny{background:#cf222e;color:#fff}
.decide{display:flex;flex-wrap:wrap;gap:1rem;align-items:flex-end;margin:1.2rem 0}.decide textarea{width:min(28rem,90vw);font:inherit}
.msg{padding:.6rem 1rem;background:#fff8c5;border-radius:6px}
p,li,h1,h2,h3,code{overflow-wrap:anywhere}
@media (max-width:40rem){th.f{width:40%}body{padding:.6rem}}
</style></head><body>
<header><span><b>kubecode</b> approvals</span>{{if .Who}}<span>signed in as <b id="who">{{.Who}}</b></span>{{if not .LinkSession}}<a href="{{.Base}}/">All plans</a> <a href="{{.Base}}/runbooks">Runbooks</a>{{end}}{{end}}</header>
<h1>{{.Title}}</h1>
{{if .Message}}<p class="msg" id="message">{{.Message}}</p>{{end}}
{{if .LinkKey}}<form method="post" action="{{.Base}}/link"><input type="hidden" name="key" value="{{.LinkKey}}"><button class="approve" id="open" type="submit">Open {{.LinkPlan}}</button></form>{{end}}
{{if .SignIn}}<form method="post" action="{{.Base}}/signin"><input type="hidden" name="next" value="{{.Next}}">
<label>Bearer token <input type="password" name="token" size="50" autocomplete="off"></label> <button type="submit">Sign in</button></form>{{end}}
{{with .Plans}}<table><tr><th>Plan</th><th>For</th><th>What it does</th><th>State</th><th>Expires</th></tr>
{{range .}}<tr><td><a href="{{$.Base}}/{{.ID}}">{{.ID}}</a>{{if .Revert}} (revert){{end}}</td><td>{{if .User}}{{shown .User}}{{else}}(server){{end}}</td><td>{{.Summary}}</td><td class="state {{.State}}">{{.State}}</td><td>{{when .Expires}}</td></tr>
{{end}}</table>{{else}}{{if .Who}}{{if not .Plan}}{{if not .LinkSession}}{{if not .RunbooksPage}}<p>No plan waits for approval.</p>{{end}}{{end}}{{end}}{{end}}{{end}}
{{if .RunbooksPage}}
<p>A runbook a person approves once, as a <b>standard change</b> with bounds, runs without a plan within them; a run outside them is planned like any change. An edited runbook is a new version, a draft until approved again. Every change a run makes still passes the policy.</p>
{{range $rb := .Runbooks}}
<section class="card" id="rb-{{.Name}}">
<h2>{{.Name}} <span class="state {{.State}}" id="state-{{.Name}}">{{.State}}</span></h2>
<p>{{shown .Description}}</p>
{{with .Check}}<p class="warn" id="check-{{$rb.Name}}">⚠ fails its type check, so it does not run: {{shown .}}</p>{{end}}
<dl class="meta"><dt>Version</dt><dd><code>{{.Version}}</code></dd><dt>From</dt><dd>{{shown .Source}}</dd><dt>Call</dt><dd><code>{{.Call}}</code></dd></dl>
<h3>Its code</h3>
<pre class="code" id="code-{{.Name}}">{{range .Lines}}{{.}}
{{end}}</pre>
{{range .Standard}}<div class="card std" id="{{.ID}}"><b>standard change {{.ID}}</b> <span class="state">{{.State}}</span><br>approved by {{shown .ApprovedBy}}<br>{{shown .Bounds}}
{{with .Preview}}<h3>Its dry run when approved</h3><ul>{{range .}}<li>{{shown .}}</li>{{end}}</ul>{{end}}
{{with .Runs}}<h3>Runs</h3><ul class="runs">{{range .}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{if .Active}}<form method="post" action="{{$.Base}}/runbooks/{{$rb.Name}}/revoke"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><label>Reason <input name="reason" size="30"></label> <button class="deny" type="submit" id="revoke-{{.ID}}">Revoke</button></form>{{end}}
</div>{{end}}
<h3>{{if eq .State "standard"}}Approve this version again, with other bounds{{else}}Approve this version as a standard change{{end}}</h3>
<form method="post" action="{{$.Base}}/runbooks/{{.Name}}/approve" class="decide" id="approve-{{.Name}}">
<input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="version" value="{{.Version}}">
<label>Namespaces its runs may change<br><input name="namespaces" id="ns-{{.Name}}" size="24" required></label>
{{range .Params}}<label>{{.Name}} must match (a regular expression; empty: any)<br><input name="pattern-{{.Name}}" id="pattern-{{$rb.Name}}-{{.Name}}" size="16"></label>{{end}}
<label>Runs an hour<br><input name="runs" size="4" value="10"></label>
<label>For days<br><input name="days" size="4" value="30"></label>
<label>Example parameters for a dry run (JSON, optional)<br><input name="example" size="30"></label>
<button class="approve" type="submit" id="approve-std-{{.Name}}">Approve version {{.Version}} as a standard change</button>
</form>
</section>
{{else}}<p>No runbooks: serve a folder of them with <code>--runbooks DIR</code>, or have an agent save one.</p>{{end}}
{{end}}
{{with .Plan}}
<p class="summary" id="summary">{{.Summary}}</p>
{{if .WillNotLast}}<p class="lasts" id="lasts">⚠ {{.WillNotLast}} of these changes will not last or not happen in full: what undoes each, and what would last, is in red below. Read it before you approve.</p>{{end}}
{{if .Revert}}<p class="revert" id="revert">A revert: this plan brings each object back to what it was before execution <code>{{.Revert}}</code>.</p>{{end}}
<dl class="meta">
<dt>State</dt><dd><span class="state {{.State}}" id="state">{{.State}}</span></dd>
{{with .Cluster}}<dt>Cluster</dt><dd id="cluster">{{shown .}}</dd>{{end}}
<dt>Acts as</dt><dd>{{if .User}}{{shown .User}}{{else}}the server's identity{{end}}</dd>
<dt>Expires</dt><dd>{{when .Expires}}</dd>
{{if gt .Approvers 1}}<dt>Approvers</dt><dd>{{.Approvers}} people ({{shown .Why}})</dd>{{end}}
</dl>
{{with .Outcome}}<p class="outcome{{if .Error}} failed{{end}}" id="outcome">Applied {{.Applied}} of {{.Planned}} changes at {{when .At}} by execution <code>{{.Execution}}</code>{{if .Error}}; stopped: {{shown .Error}}{{end}}.{{if not .NoRevert}} To undo it: <code>tools.kubecode.revert({execution: "{{.Execution}}"})</code> or <code>kubecode revert {{.Execution}}</code>{{with .NoUndo}} — it cannot undo: {{range $i, $w := .}}{{if $i}}; {{end}}{{shown $w}}{{end}}{{end}}.{{else}}{{with .NoUndo}} No undo: {{range $i, $w := .}}{{if $i}}; {{end}}{{shown $w}}{{end}}.{{end}}{{end}}</p>{{end}}
{{with .Decisions}}<ul id="decisions">{{range .}}<li>{{if .Approve}}approved{{else}}denied{{end}} by {{shown .By}} ({{.Channel}}, {{when .At}}){{if .Self}} — self-approval{{end}}{{with .Reason}}: <q class="reason">{{shown .}}</q>{{end}}</li>{{end}}</ul>{{end}}
{{range $i, $c := .Calls}}<section class="card">
<h2>{{inc $i}}. {{$c.Op}} <code>{{shown $c.Object}}</code></h2>
{{with $c.Review.RevertOf}}<p class="revert">revert: brings it back to what it was before execution <code>{{.}}</code></p>{{end}}
{{range $c.Review.After}}<p class="{{if lasts .}}after{{else}}lasts{{end}}">{{shown .}}</p>{{end}}
{{if index $.Plan.Hidden $i}}<p class="warn">⚠ invisible or reordering characters: shown below as \u escapes — read them before you approve</p>{{end}}
{{range $c.Review.Warnings}}<p class="warn">⚠ {{shown .}}</p>{{end}}
{{with $c.Review.Impact}}<p class="impact">impact: {{shown .}}</p>{{end}}
{{range $c.Review.Tables}}<h3>{{.Verb}} <code>{{shown .Object}}</code></h3>
{{if .Fields}}{{if .Call}}<table class="fields call"><tr><th class="f">Argument</th><th>Value sent</th></tr>
{{range .Fields}}<tr><td><code>{{shown .Path}}</code></td><td class="v">{{shown .After}}</td></tr>
{{end}}</table>{{else if eq .Verb "create"}}<table class="fields create"><tr><th class="f">Field</th><th>Value</th></tr>
{{range .Fields}}<tr><td><code>{{shown .Path}}</code></td><td class="v new">{{shown .After}}</td></tr>
{{end}}</table>{{else}}<table class="fields"><tr><th class="f">Field</th><th>Before</th><th>After</th></tr>
{{range .Fields}}<tr><td><code>{{shown .Path}}</code></td><td class="v old">{{shown .Before}}</td><td class="v new">{{shown .After}}</td></tr>
{{end}}</table>{{end}}{{end}}
{{with .Lines}}<ul>{{range .}}<li>{{shown .}}</li>{{end}}</ul>{{end}}
{{end}}
{{with $c.Review.Lines}}<h3>What it does</h3><ul>{{range .}}<li>{{shown .}}</li>{{end}}</ul>{{end}}
<details class="call"><summary>the full call</summary><pre>{{pretty $c.Arguments}}</pre></details>
</section>
{{end}}
<h3>The plan as the agent and the CLI read it</h3>
<pre id="plan">{{.Text}}</pre>
{{if eq .State "pending"}}
<div class="decide">
{{if .CannotApprove}}<p class="warn" id="cannot">You cannot approve this plan: {{shown .CannotApprove}}</p>{{else}}<form method="post" action="{{$.Base}}/{{.ID}}/approve"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button class="approve" id="approve" type="submit">Approve</button></form>{{end}}
<form method="post" action="{{$.Base}}/{{.ID}}/deny"><input type="hidden" name="csrf" value="{{$.CSRF}}"><label>Reason (the agent reads it)<br><textarea name="reason" id="reason" rows="2" maxlength="1000"></textarea></label><br><button class="deny" id="deny" type="submit">Deny</button></form>
</div>
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
