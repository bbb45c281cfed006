package broker

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kubecode/kubecode/bridge"
)

// runbooksPath is the approval page's runbooks: the segment after its base,
// and what a one-time link for them opens.
const runbooksPath = "runbooks"

// runbookCard is a runbook as the page shows it.
type runbookCard struct {
	RunbookView
	Call     string
	Lines    []string // its code, line by line, escaped where people cannot see
	Standard []standardCard
}

// standardCard is a standard change as the page shows it.
type standardCard struct {
	ID, State, ApprovedBy, Bounds string
	Active                        bool
	Preview, Runs                 []string
}

// runbooksPage serves the page's runbooks: GET lists them, each with its
// code, parameters, standard changes and runs, and a form that approves
// its version as a standard change; POST NAME/approve and NAME/revoke
// decide.
func (pg *approvalPage) runbooksPage(w http.ResponseWriter, r *http.Request, ses session, rest string) {
	name, action, _ := strings.Cut(rest, "/")
	msg := ""
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(pg.csrf(r))) != 1 {
			http.Error(w, "Forbidden: the form is stale or not this page's; reload the page", http.StatusForbidden)
			return
		}
		switch action {
		case "approve":
			msg = pg.approveOnPage(r, ses, name)
		case "revoke":
			msg = pg.revokeOnPage(r, ses, name)
		default:
			http.Error(w, "Not found: POST runbooks/NAME/approve or runbooks/NAME/revoke", http.StatusNotFound)
			return
		}
	} else if r.Method != http.MethodGet || rest != "" {
		http.Error(w, "Not found: the page lists runbooks at "+pg.path+"/runbooks", http.StatusNotFound)
		return
	}
	views, err := pg.b.RunbookViews(r.Context())
	if err != nil {
		pg.page(w, http.StatusBadGateway, "Runbooks are unavailable", err.Error(), map[string]any{"Who": ses.By})
		return
	}
	cards := make([]runbookCard, 0, len(views))
	now := time.Now()
	for _, v := range views {
		c := runbookCard{RunbookView: v, Call: v.Signature()}
		for _, l := range strings.Split(strings.TrimRight(v.Code, "\n"), "\n") {
			shown, _ := visible(l)
			c.Lines = append(c.Lines, shown)
		}
		for _, sc := range v.Standard {
			sv := standardCard{ID: sc.ID, Bounds: sc.Bounds.Text(), ApprovedBy: (&bridge.Pending{Decisions: []bridge.Decision{sc.Approved}}).Decided(), Preview: sc.Preview}
			switch {
			case sc.Revoked != nil:
				sv.State = "revoked by " + (&bridge.Pending{Decisions: []bridge.Decision{*sc.Revoked}}).Decided()
			case sc.Version != v.Version || sc.Code != v.Code:
				sv.State = "for version " + sc.Version + ", not this one"
			case !sc.Active(now):
				sv.State = "ended"
			default:
				sv.State, sv.Active = "active", true
			}
			for _, run := range sc.Runs {
				who := run.User
				if who == "" {
					who = "the server's identity"
				}
				sv.Runs = append(sv.Runs, fmt.Sprintf("%s  %s  for %s  %s", run.At.UTC().Format(time.RFC3339), run.Execution, who, compactJSON(run.Params)))
			}
			c.Standard = append(c.Standard, sv)
		}
		cards = append(cards, c)
	}
	pg.page(w, http.StatusOK, "Runbooks", msg, map[string]any{"Who": ses.By, "LinkSession": ses.Plan != "", "RunbooksPage": true, "Runbooks": cards, "CSRF": pg.csrf(r)})
}

// approveOnPage approves runbook name as the form says, and says what
// came of it.
func (pg *approvalPage) approveOnPage(r *http.Request, ses session, name string) string {
	f := r.PostForm
	bounds := bridge.Bounds{Namespaces: strings.FieldsFunc(f.Get("namespaces"), func(r rune) bool { return r == ',' || r == ' ' })}
	if v := strings.TrimSpace(f.Get("runs")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return "Not approved: runs an hour is a whole number"
		}
		bounds.RunsPerHour = n
	}
	if v := strings.TrimSpace(f.Get("days")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return "Not approved: days is a whole number above 0"
		}
		bounds.Until = time.Now().Add(time.Duration(n) * 24 * time.Hour)
	}
	for key, vals := range f {
		param, ok := strings.CutPrefix(key, "pattern-")
		if !ok || strings.TrimSpace(vals[0]) == "" {
			continue
		}
		if bounds.Params == nil {
			bounds.Params = map[string]bridge.ParamBound{}
		}
		bounds.Params[param] = bridge.ParamBound{Pattern: strings.TrimSpace(vals[0])}
	}
	var example json.RawMessage
	if v := strings.TrimSpace(f.Get("example")); v != "" {
		if !json.Valid([]byte(v)) {
			return "Not approved: the example parameters are a JSON object: {\"namespace\": \"shop\"}"
		}
		example = json.RawMessage(v)
	}
	sc, err := pg.b.ApproveRunbook(r.Context(), name, f.Get("version"), bounds, example,
		bridge.Decision{By: ses.By, Channel: bridge.ChannelPage, Approve: true, Verified: ses.Verified})
	if err != nil {
		return "Not approved: " + err.Error()
	}
	return fmt.Sprintf("Standard change %s approved: runs of runbook %s within %s apply without a plan; every other run is planned.", sc.ID, sc.Runbook, sc.Bounds.Text())
}

// revokeOnPage revokes the standard change the form names, of runbook
// name.
func (pg *approvalPage) revokeOnPage(r *http.Request, ses session, name string) string {
	id := r.PostForm.Get("id")
	scs, err := pg.b.bridge.StandardChanges(r.Context())
	if err != nil {
		return err.Error()
	}
	for _, sc := range scs {
		if sc.ID == id && sc.Runbook == name {
			if _, err := pg.b.RevokeStandard(r.Context(), id, bridge.Decision{By: ses.By, Channel: bridge.ChannelPage, Verified: ses.Verified, Reason: r.PostForm.Get("reason")}); err != nil {
				return "Not revoked: " + err.Error()
			}
			return "Standard change " + id + " revoked: the next run of " + name + " is refused, on every replica."
		}
	}
	return "Not revoked: runbook " + name + " has no standard change " + id
}

func compactJSON(raw json.RawMessage) string {
	var b strings.Builder
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v)
	b.Write(out)
	shown, _ := visible(b.String())
	return shown
}
