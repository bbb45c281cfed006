package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/catalog"
)

// APIApproveRunbook is what POST api/runbooks/NAME/approve takes: the
// version the person read, the bounds they set, and example parameters
// for the dry run kept with the approval.
type APIApproveRunbook struct {
	Version string          `json:"version"`
	Bounds  bridge.Bounds   `json:"bounds"`
	Example json.RawMessage `json:"example,omitempty"`
}

// serveRunbooks is the runbooks' part of the CLI's API: GET runbooks, GET
// runbooks/NAME, POST runbooks/NAME/preview (body: example parameters),
// POST runbooks/NAME/approve (APIApproveRunbook), POST standard/ID/revoke.
func (pg *approvalPage) serveRunbooks(w http.ResponseWriter, r *http.Request, path, who string, verified bool, caller *catalog.Caller) {
	fail := func(status int, msg string) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	body := func(v any) bool {
		raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if len(strings.TrimSpace(string(raw))) == 0 {
			return true
		}
		if err := json.Unmarshal(raw, v); err != nil {
			fail(http.StatusBadRequest, "the body is JSON: "+err.Error())
			return false
		}
		return true
	}
	status := func(err error) int {
		if errors.Is(err, bridge.ErrPlan) {
			return http.StatusConflict
		}
		return http.StatusBadRequest
	}
	b := pg.b
	if id, ok := strings.CutPrefix(path, "standard/"); ok {
		id, action, _ := strings.Cut(id, "/")
		if r.Method != http.MethodPost || action != "revoke" {
			fail(http.StatusNotFound, "the API serves POST standard/ID/revoke")
			return
		}
		var in struct {
			Reason string `json:"reason"`
		}
		if !body(&in) {
			return
		}
		sc, err := b.RevokeStandard(r.Context(), id, bridge.Decision{By: who, Channel: bridge.ChannelCLI, Verified: verified, Reason: in.Reason})
		if err != nil {
			fail(status(err), err.Error())
			return
		}
		_ = enc.Encode(sc)
		return
	}
	rest := strings.Trim(strings.TrimPrefix(path, "runbooks"), "/")
	name, action, _ := strings.Cut(rest, "/")
	views, err := b.RunbookViews(r.Context())
	if err != nil {
		fail(http.StatusBadGateway, err.Error())
		return
	}
	switch {
	case r.Method == http.MethodPost && name == "link" && action == "":
		// A one-time link to the page's runbooks, for the person at the
		// CLI of a local server.
		if pg.opts.Authenticate != nil {
			fail(http.StatusBadRequest, "this server signs people in with their own token: open "+pg.planURL(runbooksPath))
			return
		}
		_ = enc.Encode(map[string]string{"link": pg.link(runbooksPath)})
	case r.Method == http.MethodGet && name == "":
		_ = enc.Encode(map[string]any{"approver": who, "runbooks": views})
	case r.Method == http.MethodGet && action == "":
		for _, v := range views {
			if v.Name == name {
				_ = enc.Encode(v)
				return
			}
		}
		fail(http.StatusNotFound, fmt.Sprintf("no runbook %s here", name))
	case r.Method == http.MethodPost && action == "preview":
		var params json.RawMessage
		if !body(&params) {
			return
		}
		lines, err := b.PreviewRunbook(r.Context(), name, params, caller)
		if err != nil {
			fail(status(err), err.Error())
			return
		}
		_ = enc.Encode(map[string]any{"lines": lines})
	case r.Method == http.MethodPost && action == "approve":
		var in APIApproveRunbook
		if !body(&in) {
			return
		}
		sc, err := b.ApproveRunbook(r.Context(), name, in.Version, in.Bounds, in.Example, bridge.Decision{By: who, Channel: bridge.ChannelCLI, Approve: true, Verified: verified})
		if err != nil {
			fail(status(err), err.Error())
			return
		}
		_ = enc.Encode(sc)
	default:
		fail(http.StatusNotFound, "the API serves GET runbooks, GET runbooks/NAME, POST runbooks/NAME/preview|approve and POST standard/ID/revoke")
	}
}
