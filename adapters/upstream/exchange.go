package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubecode/kubecode/catalog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Under --auth each call is some user's. An HTTP upstream that takes
// per-user tokens gets one made for that user by the operator's token
// service (OAuth 2.0 Token Exchange, RFC 8693): the caller's own token is
// sent to the token service, never to the upstream (the MCP specification
// forbids passing tokens through), and each user's calls go over a session
// of their own.

// TokenExchange is an upstream's token service.
type TokenExchange struct {
	// URL is the token endpoint.
	URL string `json:"url"`
	// Audience, Resource and Scope say what the token is for (any may be
	// empty).
	Audience string `json:"audience,omitempty"`
	Resource string `json:"resource,omitempty"`
	Scope    string `json:"scope,omitempty"`
	// ClientID and ClientSecret authenticate kubecode to the token
	// service (HTTP basic), when it asks.
	ClientID     *Secret `json:"clientId,omitempty"`
	ClientSecret *Secret `json:"clientSecret,omitempty"`
	// SubjectTokenType is the caller's token's type. Empty means
	// urn:ietf:params:oauth:token-type:access_token.
	SubjectTokenType string `json:"subjectTokenType,omitempty"`
}

const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess    = "urn:ietf:params:oauth:token-type:access_token"
	maxUserSessions    = 256
	userSessionIdle    = 10 * time.Minute
)

// userSession is one user's connection to an upstream, with the token
// made for them.
type userSession struct {
	mu      sync.Mutex
	cs      *mcp.ClientSession
	token   atomic.Pointer[string] // read by each request without mu
	expires time.Time
	used    time.Time
}

// exchanged is a token the token service made.
type exchanged struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// exchange asks the token service for a token for the caller.
func (u *Upstream) exchange(ctx context.Context, subject string) (string, time.Time, error) {
	x := u.cfg.TokenExchange
	form := url.Values{"grant_type": {grantTokenExchange}, "subject_token": {subject}, "requested_token_type": {tokenTypeAccess}}
	form.Set("subject_token_type", tokenTypeAccess)
	if x.SubjectTokenType != "" {
		form.Set("subject_token_type", x.SubjectTokenType)
	}
	for k, v := range map[string]string{"audience": x.Audience, "resource": x.Resource, "scope": x.Scope} {
		if v != "" {
			form.Set(k, v)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if x.ClientID != nil {
		id, err := x.ClientID.value()
		if err != nil {
			return "", time.Time{}, fmt.Errorf("tokenExchange.clientId: %w", err)
		}
		secret := ""
		if x.ClientSecret != nil {
			if secret, err = x.ClientSecret.value(); err != nil {
				return "", time.Time{}, fmt.Errorf("tokenExchange.clientSecret: %w", err)
			}
			x.ClientSecret.register(u.opts.Secrets, secret, "upstream "+u.cfg.Name+" token service secret")
		}
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("the token service of upstream %s: %w", u.cfg.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", time.Time{}, err
	}
	var out exchanged
	_ = json.Unmarshal(body, &out)
	if resp.StatusCode != http.StatusOK || out.AccessToken == "" {
		why := out.Error
		if out.Description != "" {
			why += ": " + out.Description
		}
		if why == "" {
			why = resp.Status
		}
		return "", time.Time{}, &catalog.CallError{Status: http.StatusForbidden, Reason: "Forbidden",
			Message: fmt.Sprintf("the token service of upstream %s made no token for this user (%s)", u.cfg.Name, cut(why, 300))}
	}
	expires := u.opts.Now().Add(time.Hour)
	if out.ExpiresIn > 0 {
		expires = u.opts.Now().Add(time.Duration(out.ExpiresIn) * time.Second)
	}
	if reg := u.opts.Secrets; reg != nil {
		// The caller's token and the one made for it: credentials the
		// upstream holds, which no result may echo to a script.
		Secret{FromEnv: "-"}.register(reg, subject, "a caller's token")
		Secret{FromEnv: "-"}.register(reg, out.AccessToken, "upstream "+u.cfg.Name+" exchanged token")
	}
	return out.AccessToken, expires, nil
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// sessionFor returns the session a call for ctx's caller goes over: under
// a token exchange, the caller's own; otherwise the upstream's.
func (u *Upstream) sessionFor(ctx context.Context) (*mcp.ClientSession, error) {
	caller := catalog.CallerFrom(ctx)
	if u.cfg.TokenExchange == nil || caller == nil {
		return u.session(ctx)
	}
	if caller.Token == "" {
		return nil, &catalog.CallError{Status: http.StatusForbidden, Reason: "Forbidden",
			Message: fmt.Sprintf("upstream %s takes a token made for each user from the user's own, and this server holds none for %s (it runs with --auth impersonate): serve with --auth passthrough", u.cfg.Name, caller.User)}
	}
	sum := sha256.Sum256([]byte(caller.Token))
	key := hex.EncodeToString(sum[:])
	u.mu.Lock()
	if u.users == nil {
		u.users = map[string]*userSession{}
	}
	us := u.users[key]
	if us == nil {
		u.evictUsers()
		us = &userSession{}
		u.users[key] = us
	}
	u.mu.Unlock()
	us.mu.Lock()
	defer us.mu.Unlock()
	now := u.opts.Now()
	us.used = now
	if us.token.Load() == nil || now.After(us.expires.Add(-30*time.Second)) {
		tok, exp, err := u.exchange(ctx, caller.Token)
		if err != nil {
			return nil, err
		}
		us.token.Store(&tok)
		us.expires = exp
	}
	if us.cs != nil {
		return us.cs, nil
	}
	cctx, cancel := context.WithTimeout(ctx, u.opts.ConnectTimeout)
	defer cancel()
	t := &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, MaxRetries: 1, HTTPClient: u.httpClient(func() string {
		return *us.token.Load() // renewed between requests
	})}
	cs, err := u.client.Connect(cctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to upstream %s for %s: %w", u.cfg.Name, caller.User, err)
	}
	us.cs = cs
	go func() {
		_ = cs.Wait()
		us.mu.Lock()
		defer us.mu.Unlock()
		if us.cs == cs { // the next call connects again
			us.cs = nil
		}
	}()
	return cs, nil
}

// evictUsers closes the sessions of users idle too long, and the least
// recently used when there are too many. u.mu is held.
func (u *Upstream) evictUsers() {
	now := u.opts.Now()
	var oldest string
	var oldestUsed time.Time
	for k, us := range u.users {
		if !us.mu.TryLock() {
			continue // in use
		}
		idle := now.Sub(us.used)
		if idle > userSessionIdle {
			if us.cs != nil {
				go us.cs.Close()
			}
			delete(u.users, k)
		} else if oldest == "" || us.used.Before(oldestUsed) {
			oldest, oldestUsed = k, us.used
		}
		us.mu.Unlock()
	}
	if len(u.users) >= maxUserSessions && oldest != "" {
		if cs := u.users[oldest].cs; cs != nil {
			go cs.Close()
		}
		delete(u.users, oldest)
	}
}
