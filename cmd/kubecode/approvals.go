package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/broker"
	"github.com/spf13/cobra"
)

// approvalPath is where the approval page is served.
const approvalPath = "/approvals"

// localApprovals is what a local server tells the CLI on this machine:
// where its approval page is and the key the CLI presents. The file is
// the user's alone (0600).
type localApprovals struct {
	URL string `json:"url"`
	Key string `json:"key"`
	PID int    `json:"pid"`
}

// approvalsFileEnv names the file instead of the default.
const approvalsFileEnv = "KUBECODE_APPROVALS_FILE"

// approvalsFile is where a local server writes localApprovals: the user's
// cache directory, or $KUBECODE_APPROVALS_FILE.
func approvalsFile() (string, error) {
	if f := os.Getenv(approvalsFileEnv); f != "" {
		return f, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "kubecode", "approvals.json"), nil
}

// localApprovalOptions returns the approval page's options for a server
// without authentication, whose page is at pageURL: one-time links on
// stderr, and a CLI key written for kubecode plans|approve|deny.
func localApprovalOptions(pageURL string, log *slog.Logger) *broker.ApprovalOptions {
	opts := &broker.ApprovalOptions{URL: pageURL, CLIKey: rand.Text() + rand.Text()}
	path, err := approvalsFile()
	if err == nil {
		raw, _ := json.Marshal(localApprovals{URL: pageURL, Key: opts.CLIKey, PID: os.Getpid()})
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			tmp := path + ".tmp"
			if err = os.WriteFile(tmp, raw, 0o600); err == nil {
				err = os.Rename(tmp, path)
			}
		}
	}
	if err != nil {
		log.Warn("kubecode approve will need --server and --token: the local approval key was not written", "error", err)
	}
	return opts
}

// serveLocalApprovals serves the approval page of a stdio server on a
// loopback address until ctx ends.
func serveLocalApprovals(ctx context.Context, addr string, b *wired, log *slog.Logger) error {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--approvals-addr: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		ln.Close()
		return fmt.Errorf("--approvals-addr %s: a stdio server serves its approval page on loopback only", addr)
	}
	pageURL := "http://" + ln.Addr().String() + approvalPath
	// Only the approval page: no MCP endpoint on this listener.
	path, page, err := b.ApprovalPageHandler(localApprovalOptions(pageURL, log), broker.ServerHosts(ln.Addr()))
	if err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(path+"/", page)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("approval page", "url", pageURL+"/", "open", "with the one-time link printed for each plan, or kubecode plans|approve|deny")
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("the approval page stopped", "error", err)
		}
	}()
	return nil
}

// httpApprovalURL is the approval page's URL for an HTTP server: under
// the public URL when there is one, else under the listen address (with
// localhost for an unspecified one).
func httpApprovalURL(publicURL string, addr net.Addr) string {
	if publicURL != "" {
		return strings.TrimSuffix(publicURL, "/") + approvalPath
	}
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + approvalPath
}

// approvalClient talks to a server's approval API.
type approvalClient struct {
	server, token string
}

func (g *approvalFlags) client() (*approvalClient, error) {
	c := &approvalClient{server: strings.TrimSuffix(g.server, "/"), token: g.token}
	if c.token == "" && c.server != "" {
		// $KUBECODE_TOKEN is for a server named: the local one takes its
		// key from the file it wrote.
		c.token = os.Getenv("KUBECODE_TOKEN")
	}
	if c.server == "" {
		path, err := approvalsFile()
		if err != nil {
			return nil, err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("no local kubecode server has written %s (%v): start one (kubecode serve or demo), or name a server with --server URL and --token", path, err)
		}
		var l localApprovals
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		c.server = l.URL
		if c.token == "" {
			c.token = l.Key
		}
	} else if !strings.HasSuffix(c.server, approvalPath) {
		c.server += approvalPath
	}
	if c.token == "" {
		return nil, fmt.Errorf("--token (or $KUBECODE_TOKEN): the Kubernetes bearer token you approve with")
	}
	return c, nil
}

func (c *approvalClient) do(ctx context.Context, method, path string, out any) error {
	return c.send(ctx, method, path, nil, out)
}

// send is do with a JSON body (none when in is nil).
func (c *approvalClient) send(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+"/api/"+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &serverUnreachable{server: c.server, err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(raw))
	}
	return json.Unmarshal(raw, out)
}

// approvalFlags are the CLI's way to a server's approval page.
type approvalFlags struct {
	server, token string
}

func (g *approvalFlags) register(cmd *cobra.Command) { g.registerAs(cmd, "server", "token") }

// registerAs registers the flags under other names (kubecode exec has the
// cluster's --server and --token of kubectl).
func (g *approvalFlags) registerAs(cmd *cobra.Command, server, token string) {
	cmd.Flags().StringVar(&g.server, server, "", "the kubecode server's URL (default: the local server that last started on this machine)")
	cmd.Flags().StringVar(&g.token, token, "", "your Kubernetes bearer token, for a server with --auth (default: $KUBECODE_TOKEN, or the local server's key)")
}

// serverUnreachable is a kubecode server that did not answer.
type serverUnreachable struct {
	server string
	err    error
}

func (e *serverUnreachable) Error() string {
	return fmt.Sprintf("reach the kubecode server at %s: %v (is it running?)", e.server, e.err)
}

// apiPlan is a plan as the approval API answers: the bridge's record and
// where it stands.
type apiPlan struct {
	bridge.Pending
	State string `json:"state"`
}

func (p *apiPlan) print(w io.Writer) {
	kind := ""
	for _, c := range p.Calls {
		if c.Review.RevertOf != "" {
			kind = "  (a revert of execution " + c.Review.RevertOf + ")"
		}
	}
	fmt.Fprintf(w, "%s  [%s]%s  expires %s\n%s\n", p.ID, p.State, kind, p.Expires.UTC().Format(time.RFC3339), p.Text)
	for _, d := range p.Decisions {
		verb := "approved"
		if !d.Approve {
			verb = "denied"
		}
		fmt.Fprintf(w, "  %s by %s\n", verb, (&bridge.Pending{Decisions: []bridge.Decision{d}}).Decided())
	}
	if o := p.Outcome; o != nil {
		fmt.Fprintf(w, "  applied %d of %d changes at %s by execution %s", o.Applied, o.Planned, o.At.UTC().Format(time.RFC3339), o.Execution)
		if o.Error != "" {
			fmt.Fprintf(w, "; stopped: %s", broker.Visible(o.Error))
		}
		if l := o.UndoLine("kubecode revert " + o.Execution); l != "" {
			fmt.Fprintf(w, " (%s)", l)
		}
		fmt.Fprintln(w)
	}
}

// printFields prints every field each change of p sets, whole: what the
// plan's lines cut.
func (p *apiPlan) printFields(w io.Writer) {
	for i, c := range p.Calls {
		for _, t := range c.Review.Tables {
			if len(t.Fields) == 0 {
				if len(t.Lines) > 0 && len(c.Review.Tables) > 1 { // an object's lines, whole: the plan's text cuts a long manifest
					fmt.Fprintf(w, "\n%d. %s %s:\n", i+1, t.Verb, broker.Visible(t.Object))
					for _, l := range t.Lines {
						fmt.Fprintf(w, "  %s\n", broker.Visible(l))
					}
				}
				continue
			}
			if t.Verb == "create" { // what it is made with: nothing before
				fmt.Fprintf(w, "\n%d. create %s, every field it is made with:\n", i+1, broker.Visible(t.Object))
				for _, l := range t.Lines {
					fmt.Fprintf(w, "  %s\n", broker.Visible(l))
				}
				for _, f := range t.Fields {
					fmt.Fprintf(w, "  %s: %s\n", broker.Visible(f.Path), broker.Visible(f.After))
				}
				continue
			}
			if t.Call { // a call's arguments: values sent, nothing before
				fmt.Fprintf(w, "\n%d. %s %s, every argument it sends:\n", i+1, t.Verb, broker.Visible(t.Object))
				for _, f := range t.Fields {
					fmt.Fprintf(w, "  %s: %s\n", broker.Visible(f.Path), broker.Visible(f.After))
				}
				continue
			}
			fmt.Fprintf(w, "\n%d. %s %s, every field it sets:\n", i+1, t.Verb, broker.Visible(t.Object))
			for _, f := range t.Fields {
				fmt.Fprintf(w, "  %s\n    before: %s\n    after:  %s\n", broker.Visible(f.Path), broker.Visible(f.Before), broker.Visible(f.After))
			}
		}
	}
}

func newPlansCommand() *cobra.Command {
	var af approvalFlags
	var link bool
	cmd := &cobra.Command{
		Use:   "plans [ID]",
		Short: "List the plans waiting for approval (or show one whole, or --link: a one-time link to its page)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := af.client()
			if err != nil {
				return err
			}
			if link {
				if len(args) != 1 {
					return errors.New("--link needs the plan's id: kubecode plans ID --link")
				}
				var out struct {
					Link string `json:"link"`
				}
				if err := c.do(cmd.Context(), http.MethodPost, "plans/"+url.PathEscape(args[0])+"/link", &out); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n(one-time: it opens plan %s in one browser, for 30 minutes)\n", out.Link, args[0])
				return nil
			}
			if len(args) == 1 {
				var p apiPlan
				if err := c.do(cmd.Context(), http.MethodGet, "plans/"+url.PathEscape(args[0]), &p); err != nil {
					return err
				}
				p.print(cmd.OutOrStdout())
				p.printFields(cmd.OutOrStdout())
				if p.State == bridge.StatePending {
					fmt.Fprintf(cmd.OutOrStdout(), "\ndecide: kubecode approve %s, or kubecode deny %s --reason \"…\"\n", p.ID, p.ID)
				}
				return nil
			}
			var list struct {
				Plans []apiPlan `json:"plans"`
			}
			if err := c.do(cmd.Context(), http.MethodGet, "plans", &list); err != nil {
				return err
			}
			if len(list.Plans) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no plan waits for approval")
			}
			for i := range list.Plans {
				list.Plans[i].print(cmd.OutOrStdout())
				fmt.Fprintln(cmd.OutOrStdout())
			}
			return nil
		},
	}
	af.register(cmd)
	cmd.Flags().BoolVar(&link, "link", false, "print a new one-time link that opens the plan's page (a local server only)")
	return cmd
}

func newDecideCommand(approve bool) *cobra.Command {
	var af approvalFlags
	var reason string
	use, short, action := "approve ID", "Approve a plan: the agent's next execute_code with approve: ID applies exactly it", "approve"
	if !approve {
		use, short, action = "deny ID", "Deny a plan: nothing of it is applied", "deny"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := af.client()
			if err != nil {
				return err
			}
			var p apiPlan
			var body any
			if reason != "" {
				body = map[string]string{"reason": reason}
			}
			if err := c.send(cmd.Context(), http.MethodPost, "plans/"+url.PathEscape(args[0])+"/"+action, body, &p); err != nil {
				return err
			}
			p.print(cmd.OutOrStdout())
			if approve && p.State == bridge.StateApproved {
				fmt.Fprintln(cmd.OutOrStdout(), "the agent's execute_code with approve: \""+p.ID+"\" now applies it (one waiting already goes on by itself)")
			}
			return nil
		},
	}
	af.register(cmd)
	if !approve {
		cmd.Flags().StringVar(&reason, "reason", "", "why: the agent reads it with the denial")
	}
	return cmd
}
