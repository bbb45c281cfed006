package kubeapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	"k8s.io/client-go/rest"
)

// ActForCallers makes every request made with cfg act for the caller its
// context carries (catalog.CallerFrom), so that the API server's RBAC
// decides with the caller's identity:
//   - a caller with a token: the request carries that bearer token, over a
//     connection without the server's credentials (no client certificate,
//     no token of the server's);
//   - a caller without one: the request carries the server's credentials
//     and impersonates the caller's user and groups (the server's identity
//     needs the impersonate verb on users and groups);
//   - no caller: the server's own identity.
//
// Call it before building clients from cfg.
func ActForCallers(cfg *rest.Config) error {
	anon, err := rest.TransportFor(rest.AnonymousClientConfig(cfg))
	if err != nil {
		return fmt.Errorf("kubeapi: transport for callers: %w", err)
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return callerTransport{server: rt, anonymous: anon} })
	return nil
}

type callerTransport struct {
	server    http.RoundTripper // the server's credentials
	anonymous http.RoundTripper // none
}

func (t callerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := catalog.CallerFrom(req.Context())
	if c == nil {
		return t.server.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k := range req.Header {
		if strings.HasPrefix(k, "Impersonate-") {
			delete(req.Header, k)
		}
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
		return t.anonymous.RoundTrip(req)
	}
	if c.User == "" {
		return nil, fmt.Errorf("kubeapi: a caller with neither a token nor a user name")
	}
	req.Header.Set("Impersonate-User", c.User)
	for _, g := range c.Groups {
		req.Header.Add("Impersonate-Group", g)
	}
	if c.UID != "" {
		req.Header.Set("Impersonate-Uid", c.UID)
	}
	for k, vs := range c.Extra {
		for _, v := range vs {
			req.Header.Add("Impersonate-Extra-"+url.PathEscape(k), v)
		}
	}
	return t.server.RoundTrip(req)
}
