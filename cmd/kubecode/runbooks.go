package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/broker"
	"github.com/spf13/cobra"
)

// newRunbooksCommand is kubecode runbooks: list runbooks and their
// standard changes, show one, approve one as a standard change, revoke one.
func newRunbooksCommand() *cobra.Command {
	var af approvalFlags
	var link bool
	cmd := &cobra.Command{
		Use:   "runbooks",
		Short: "List runbooks, their standard changes and recent runs (show, approve, revoke: see the subcommands; --link: open them on the approval page)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := af.client()
			if err != nil {
				return err
			}
			if link {
				var out struct {
					Link string `json:"link"`
				}
				if err := c.do(cmd.Context(), http.MethodPost, "runbooks/link", &out); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n(one-time: it opens the runbooks in one browser, for 30 minutes)\n", out.Link)
				return nil
			}
			var list struct {
				Runbooks []broker.RunbookView `json:"runbooks"`
			}
			if err := c.do(cmd.Context(), http.MethodGet, "runbooks", &list); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if len(list.Runbooks) == 0 {
				fmt.Fprintln(w, "no runbooks: serve a folder of them with --runbooks DIR, or have an agent save one (tools.kubecode.runbooks.save)")
			}
			for _, v := range list.Runbooks {
				printRunbook(w, v, false)
				fmt.Fprintln(w)
			}
			return nil
		},
	}
	af.register(cmd)
	cmd.Flags().BoolVar(&link, "link", false, "print a one-time link that opens the runbooks on the approval page (a local server only)")
	cmd.AddCommand(newRunbookShowCommand(), newRunbookApproveCommand(), newRunbookRevokeCommand())
	return cmd
}

// printRunbook prints a runbook, its standard changes and their recent
// runs; with code, its whole code too.
func printRunbook(w io.Writer, v broker.RunbookView, code bool) {
	fmt.Fprintf(w, "%s  version %s  [%s]  (%s)\n  %s\n", v.Name, v.Version, v.State, v.Source, broker.Visible(v.Description))
	fmt.Fprintf(w, "  call: %s\n", v.Signature())
	if v.Check != "" {
		fmt.Fprintf(w, "  ⚠ fails its type check, so it does not run: %s\n", broker.Visible(v.Check))
	}
	for _, sc := range v.Standard {
		state := "active"
		switch {
		case sc.Revoked != nil:
			state = "revoked by " + (&bridge.Pending{Decisions: []bridge.Decision{*sc.Revoked}}).Decided()
		case sc.Version != v.Version:
			state = "for version " + sc.Version + ", not this one"
		case !sc.Active(time.Now()):
			state = "ended"
		}
		fmt.Fprintf(w, "  standard change %s [%s]\n    approved by %s\n    %s\n", sc.ID, state,
			(&bridge.Pending{Decisions: []bridge.Decision{sc.Approved}}).Decided(), boundsText(sc.Bounds))
		for _, r := range sc.Runs {
			who := r.User
			if who == "" {
				who = "the server's identity"
			}
			var params bytes.Buffer
			_ = json.Compact(&params, r.Params)
			fmt.Fprintf(w, "    run %s  %s  for %s  %s\n", r.At.UTC().Format(time.RFC3339), r.Execution, who, broker.Visible(params.String()))
		}
	}
	if code {
		fmt.Fprintf(w, "\n--- %s.ts (version %s) ---\n", v.Name, v.Version)
		for _, l := range strings.Split(strings.TrimRight(v.Code, "\n"), "\n") {
			fmt.Fprintln(w, broker.Visible(l)) // each line as it is, what a person cannot see escaped
		}
	}
}

// boundsText says a standard change's bounds on one line.
func boundsText(b bridge.Bounds) string { return b.Text() }

// exampleParams reads --example: a JSON object, or name=value pairs (a
// value that reads as JSON — a number, true — is that).
func exampleParams(pairs []string) (json.RawMessage, error) {
	if len(pairs) == 1 && strings.HasPrefix(strings.TrimSpace(pairs[0]), "{") {
		var m map[string]any
		if err := json.Unmarshal([]byte(pairs[0]), &m); err != nil {
			return nil, fmt.Errorf("--example: %v", err)
		}
		return json.RawMessage(pairs[0]), nil
	}
	if len(pairs) == 0 {
		return nil, nil
	}
	m := map[string]any{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--example %q: write name=value", p)
		}
		var j any
		if json.Unmarshal([]byte(v), &j) == nil {
			m[k] = j
		} else {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

func newRunbookShowCommand() *cobra.Command {
	var af approvalFlags
	var example []string
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a runbook whole (its code, parameters, standard changes and runs) and, with --example, what its dry run would change",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := af.client()
			if err != nil {
				return err
			}
			var v broker.RunbookView
			if err := c.do(cmd.Context(), http.MethodGet, "runbooks/"+url.PathEscape(args[0]), &v); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			printRunbook(w, v, true)
			ex, err := exampleParams(example)
			if err != nil {
				return err
			}
			if ex != nil {
				var out struct {
					Lines []string `json:"lines"`
				}
				if err := c.send(cmd.Context(), http.MethodPost, "runbooks/"+url.PathEscape(args[0])+"/preview", ex, &out); err != nil {
					return err
				}
				fmt.Fprintf(w, "\n--- its dry run with %s ---\n%s\n", ex, strings.Join(out.Lines, "\n"))
			}
			if v.State != "standard" {
				fmt.Fprintf(w, "\napprove it: kubecode runbooks approve %s --version %s --namespace NS [--pattern name=RE] [--example name=value]\n", v.Name, v.Version)
			}
			return nil
		},
	}
	af.register(cmd)
	cmd.Flags().StringArrayVar(&example, "example", nil, "example parameters for a dry run: name=value (repeatable) or a JSON object")
	return cmd
}

func newRunbookApproveCommand() *cobra.Command {
	var af approvalFlags
	var version, until string
	var namespaces, values, patterns, ranges, example []string
	var perHour int
	var forDur time.Duration
	cmd := &cobra.Command{
		Use:   "approve NAME --version V --namespace NS",
		Short: "Approve a runbook's version once as a standard change: its runs within the bounds apply without a plan of their own",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if version == "" {
				return fmt.Errorf("--version: the version you read (kubecode runbooks show %s prints it)", args[0])
			}
			in := broker.APIApproveRunbook{Version: version, Bounds: bridge.Bounds{Namespaces: namespaces, RunsPerHour: perHour}}
			bound := func(flag, s string, f func(*bridge.ParamBound, string) error) error {
				name, v, ok := strings.Cut(s, "=")
				if !ok || name == "" {
					return fmt.Errorf("--%s %q: write PARAM=%s", flag, s, strings.ToUpper(flag))
				}
				if in.Bounds.Params == nil {
					in.Bounds.Params = map[string]bridge.ParamBound{}
				}
				pb := in.Bounds.Params[name]
				if err := f(&pb, v); err != nil {
					return fmt.Errorf("--%s %s: %v", flag, s, err)
				}
				in.Bounds.Params[name] = pb
				return nil
			}
			for _, s := range values {
				if err := bound("values", s, func(pb *bridge.ParamBound, v string) error { pb.Values = strings.Split(v, ","); return nil }); err != nil {
					return err
				}
			}
			for _, s := range patterns {
				if err := bound("pattern", s, func(pb *bridge.ParamBound, v string) error { pb.Pattern = v; return nil }); err != nil {
					return err
				}
			}
			for _, s := range ranges {
				if err := bound("range", s, func(pb *bridge.ParamBound, v string) error {
					lo, hi, ok := strings.Cut(v, "..")
					if !ok {
						return fmt.Errorf("write LO..HI (either may be empty)")
					}
					for _, e := range []struct {
						s string
						p **float64
					}{{lo, &pb.Min}, {hi, &pb.Max}} {
						if e.s == "" {
							continue
						}
						f, err := strconv.ParseFloat(e.s, 64)
						if err != nil {
							return err
						}
						*e.p = &f
					}
					return nil
				}); err != nil {
					return err
				}
			}
			switch {
			case until != "" && forDur != 0:
				return fmt.Errorf("--until or --for, not both")
			case until != "":
				t, err := time.Parse(time.RFC3339, until)
				if err != nil {
					return fmt.Errorf("--until: %v", err)
				}
				in.Bounds.Until = t
			case forDur != 0:
				in.Bounds.Until = time.Now().Add(forDur)
			}
			ex, err := exampleParams(example)
			if err != nil {
				return err
			}
			in.Example = ex
			c, err := af.client()
			if err != nil {
				return err
			}
			var sc bridge.StandardChange
			if err := c.send(cmd.Context(), http.MethodPost, "runbooks/"+url.PathEscape(args[0])+"/approve", in, &sc); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "standard change %s: runbook %s version %s\n  approved by %s\n  %s\n", sc.ID, sc.Runbook, sc.Version,
				(&bridge.Pending{Decisions: []bridge.Decision{sc.Approved}}).Decided(), boundsText(sc.Bounds))
			if len(sc.Preview) > 0 {
				var ex bytes.Buffer
				_ = json.Compact(&ex, sc.Example)
				fmt.Fprintf(w, "  its dry run with %s:\n    %s\n", ex.String(), strings.Join(sc.Preview, "\n    "))
			}
			fmt.Fprintf(w, "runs within these bounds now apply without a plan; every other run is planned. End it: kubecode runbooks revoke %s\n", sc.ID)
			return nil
		},
	}
	af.register(cmd)
	f := cmd.Flags()
	f.StringVar(&version, "version", "", "the runbook's version you read (required: an edited runbook is another version)")
	f.StringArrayVar(&namespaces, "namespace", nil, "a namespace its runs may change (required, repeatable)")
	f.StringArrayVar(&values, "values", nil, "PARAM=a,b,c: the only values a parameter may take (repeatable)")
	f.StringArrayVar(&patterns, "pattern", nil, "PARAM=RE: a regular expression a parameter's whole value matches (repeatable)")
	f.StringArrayVar(&ranges, "range", nil, "PARAM=LO..HI: bounds of a number parameter (repeatable)")
	f.IntVar(&perHour, "runs-per-hour", 0, "runs allowed in any hour, on every replica together (default 10)")
	f.StringVar(&until, "until", "", "when the approval ends (RFC 3339; default: in 30 days; at most a year)")
	f.DurationVar(&forDur, "for", 0, "how long the approval lasts (instead of --until): 168h")
	f.StringArrayVar(&example, "example", nil, "example parameters whose dry run is kept with the approval: name=value (repeatable) or a JSON object")
	return cmd
}

func newRunbookRevokeCommand() *cobra.Command {
	var af approvalFlags
	var reason string
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a standard change: the next run of its runbook is refused, on every replica",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := af.client()
			if err != nil {
				return err
			}
			var body any
			if reason != "" {
				body = map[string]string{"reason": reason}
			}
			var sc bridge.StandardChange
			if err := c.send(cmd.Context(), http.MethodPost, "standard/"+url.PathEscape(args[0])+"/revoke", body, &sc); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "standard change %s of runbook %s revoked by %s: its next run is refused\n", sc.ID, sc.Runbook,
				(&bridge.Pending{Decisions: []bridge.Decision{*sc.Revoked}}).Decided())
			return nil
		},
	}
	af.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why: kept with the revocation")
	return cmd
}
