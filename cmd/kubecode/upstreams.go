package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/kubecode/kubecode/adapters/upstream"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/catalog/secrets"
	"github.com/spf13/cobra"
)

// upstreamSet are the upstream MCP servers of --upstreams.
type upstreamSet struct {
	file *upstream.File
	pins *upstream.Pins
	all  []*upstream.Upstream
}

// loadUpstreams reads --upstreams and its pins (none when unset). The
// credentials the upstreams are given are registered in reg (nil: not).
func (g *globalFlags) loadUpstreams(log *slog.Logger, reg *secrets.Registry) (*upstreamSet, error) {
	set := &upstreamSet{}
	if g.upstreams == "" {
		return set, nil
	}
	f, err := upstream.ReadFile(g.upstreams)
	if err != nil {
		return nil, err
	}
	pins, err := upstream.ReadPins(f.PinsPath())
	if err != nil {
		return nil, err
	}
	set.file, set.pins = f, pins
	for _, cfg := range f.Upstreams {
		set.all = append(set.all, upstream.New(cfg, &upstream.Options{Pins: pins, PinsPath: f.PinsPath(), Version: versionString(), Log: log, Secrets: reg}))
	}
	return set, nil
}

func (s *upstreamSet) providers() []bridge.Provider {
	var out []bridge.Provider
	for _, u := range s.all {
		out = append(out, u)
	}
	return out
}

// Close stops every upstream (stdio servers exit).
func (s *upstreamSet) Close() error {
	var first error
	for _, u := range s.all {
		if err := u.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func newUpstreamsCommand(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "upstreams",
		Short: "Show the upstream MCP servers of --upstreams and each tool: served (read or change, and why), or quarantined until pinned (new, or changed: with the diff)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, all, err := g.upstreamStatus(cmd)
			if err != nil {
				return err
			}
			defer set.Close()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(all)
			}
			writeUpstreams(cmd.OutOrStdout(), all, g.upstreams, set.file.PinsPath())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	pin := &cobra.Command{
		Use:   "pin [UPSTREAM[.TOOL]...]",
		Short: "Pin the tools' current declarations (all, an upstream's, or the tools named), after reviewing them with kubecode upstreams: only pinned tools are served, and a tool whose declaration moves is quarantined until pinned again",
		RunE: func(cmd *cobra.Command, args []string) error {
			set, all, err := g.upstreamStatus(cmd)
			if err != nil {
				return err
			}
			defer set.Close()
			// UPSTREAM.TOOL@SHA pins the tool only if its declaration is
			// still the one reviewed: a server cannot show one and have
			// another pinned.
			reviewed := map[string]string{}
			var names []string
			for _, a := range args {
				name, sha, _ := strings.Cut(a, "@")
				names = append(names, name)
				if sha != "" {
					reviewed[name] = sha
				}
			}
			want := func(up, tool string) bool {
				return len(names) == 0 || slices.Contains(names, up) || slices.Contains(names, up+"."+tool)
			}
			// All or nothing: every upstream named is checked first, and
			// only then is anything pinned, written and said.
			pinned := 0
			var lines []string
			var apply []func() bool
			for _, st := range all {
				if st.Error != "" && len(st.Tools) == 0 {
					if len(args) == 0 || slices.ContainsFunc(args, func(a string) bool { return a == st.Name || strings.HasPrefix(a, st.Name+".") }) {
						return fmt.Errorf("nothing pinned: upstream %s is unreachable (%s); pin the others by name, or try again", st.Name, broker.Visible(st.Error))
					}
					continue
				}
				for _, t := range st.Tools {
					if !want(st.Name, t.Tool) {
						continue
					}
					switch t.State {
					case "gone":
						apply = append(apply, func() bool { set.pins.Unpin(st.Name, t.Tool); return false })
						lines = append(lines, fmt.Sprintf("unpinned %s.%s (no longer listed)", st.Name, t.Tool))
						continue
					case "hidden":
						continue
					case "unservable":
						lines = append(lines, fmt.Sprintf("not pinned %s.%s: %s", st.Name, t.Tool, t.Why))
						continue
					}
					if sha, ok := reviewed[st.Name+"."+t.Tool]; ok && t.State == "served" && t.Learnt != nil {
						// A served tool's review is of its learnt type.
						if !strings.HasPrefix(t.LearntSHA256, sha) {
							return fmt.Errorf("nothing pinned: %s.%s: its learnt result type is now %.12s, not the %s you reviewed: review it again (kubecode upstreams)", st.Name, broker.Visible(t.Tool), t.LearntSHA256, sha)
						}
					} else if ok && !strings.HasPrefix(t.SHA256, sha) {
						return fmt.Errorf("nothing pinned: %s.%s: its declaration is now %.12s, not the %s you reviewed: review it again (kubecode upstreams)", st.Name, broker.Visible(t.Tool), t.SHA256, sha)
					}
					verb := "pinned"
					if t.State == "changed" {
						verb = "pinned again"
					}
					line := fmt.Sprintf("%s %s.%s", verb, st.Name, t.Tool)
					apply = append(apply, func() bool {
						if set.pins.Pin(st.Name, t.Tool, t.SHA256, t.Declaration, time.Now()) {
							lines = append(lines, line)
							return true
						}
						return false
					})
					if t.Learnt != nil {
						apply = append(apply, func() bool {
							if set.pins.PinLearnt(st.Name, t.Tool, t.SHA256, t.Learnt) {
								lines = append(lines, fmt.Sprintf("pinned the learnt result type of %s.%s", st.Name, t.Tool))
								return true
							}
							return false
						})
					}
				}
			}
			for _, f := range apply {
				if f() {
					pinned++
				}
			}
			if err := set.pins.Write(set.file.PinsPath()); err != nil {
				return fmt.Errorf("nothing pinned: write the pins: %w", err)
			}
			for _, l := range lines {
				fmt.Fprintln(cmd.OutOrStdout(), l)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d tools pinned in %s; a running server serves them within seconds\n", pinned, set.file.PinsPath())
			return nil
		},
	}
	cmd.AddCommand(pin)
	return cmd
}

// upstreamStatus loads --upstreams and asks each upstream how it is; close
// the set when done.
func (g *globalFlags) upstreamStatus(cmd *cobra.Command) (*upstreamSet, []upstream.Status, error) {
	set, err := g.upstreamsFor(cmd)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	var all []upstream.Status
	for _, u := range set.all {
		all = append(all, u.Status(ctx))
	}
	return set, all, nil
}

// upstreamsFor loads --upstreams for a command that needs it.
func (g *globalFlags) upstreamsFor(cmd *cobra.Command) (*upstreamSet, error) {
	if g.upstreams == "" {
		return nil, fmt.Errorf("give --upstreams FILE: the YAML file naming the upstream MCP servers (see docs/upstreams.md)")
	}
	return g.loadUpstreams(g.logger(), nil)
}

// writeUpstreams prints the upstreams and their tools for a person. What
// a server wrote (names, descriptions, errors) is shown with hidden and
// control characters escaped: it cannot rewrite the operator's terminal.
func writeUpstreams(w io.Writer, all []upstream.Status, file, pinsPath string) {
	v := broker.Visible
	for i, st := range all {
		if i > 0 {
			fmt.Fprintln(w)
		}
		state := "connected"
		if !st.Connected {
			state = "not connected"
		}
		fmt.Fprintf(w, "%s (%s): %s\n", st.Name, v(st.Transport), state)
		if st.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", v(st.Error))
		}
		for _, warn := range st.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", v(warn))
		}
		waiting := 0
		for _, t := range st.Tools {
			switch t.State {
			case "served":
				fmt.Fprintf(w, "  %-6s %-34s served: %s\n", t.Kind, "tools."+t.Operation, v(t.Why))
			default:
				fmt.Fprintf(w, "  %-6s %-34s %s: %s\n", "-", v(t.Tool), t.State, v(t.Why))
			}
			if t.Description != "" && t.State != "served" {
				fmt.Fprintf(w, "      %s\n", v(t.Description))
			}
			for _, d := range t.Diff {
				fmt.Fprintf(w, "      ~ %s\n", v(d))
			}
			for _, c := range t.Cleaned {
				fmt.Fprintf(w, "      cleaned: %s\n", v(c))
			}
			if t.Learnt != nil {
				name := t.Operation // as scripts call it
				if name == "" {
					name = st.Name + "." + t.Tool
				}
				decl := catalog.Declaration(&catalog.Operation{Name: name, Provider: st.Name, Verb: strings.TrimPrefix(name, st.Name+"."), Input: &catalog.Schema{Type: "object"}, Output: t.Learnt})
				fmt.Fprintf(w, "      learnt result type, served to no session until pinned:\n")
				for _, l := range strings.Split(strings.TrimSpace(decl), "\n") {
					fmt.Fprintf(w, "        %s\n", v(l))
				}
				if t.State == "served" {
					waiting++
					fmt.Fprintf(w, "      pin it as reviewed: kubecode upstreams pin %s.%s@%.12s --upstreams %s\n", st.Name, v(t.Tool), t.LearntSHA256, file)
				}
			}
			if t.State == "new" || t.State == "changed" {
				waiting++
				fmt.Fprintf(w, "      pin as reviewed: kubecode upstreams pin %s.%s@%.12s --upstreams %s\n", st.Name, v(t.Tool), t.SHA256, file)
			}
		}
		if waiting > 0 {
			fmt.Fprintf(w, "  %d tools wait to be pinned: review them, then pin each as reviewed, or all: kubecode upstreams pin %s --upstreams %s (pins: %s)\n", waiting, st.Name, file, pinsPath)
		}
	}
}
