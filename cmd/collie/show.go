package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// cmdShow shows what the bridge holds, agent by agent (printAgent),
// through a terminal-safe writer.
func cmdShow(ctx context.Context, e *env, args []string) error {
	return list[view.Agent]{
		name: "collie show",
		fetch: func(ctx context.Context, _ *env, paths config.Paths) ([]view.Agent, error) {
			return control.NewClient(paths.Control()).View(ctx)
		},
		empty: "no durable agents attached; attach one with: collie durable attach NAME --socket PATH",
		text: func(w io.Writer, agents []view.Agent) error {
			for _, a := range agents {
				printAgent(w, a)
			}
			return nil
		},
	}.run(ctx, e, args)
}

// line cleans a single-line string for the terminal.
func termLine(s string) string { return sanitize.TerminalLine(s) }

// printAgent writes one agent's view as text. Every string in it was
// cleaned on arrival (X1); it is cleaned again here, single-line fields
// as one line (so a newline cannot forge a row), and cmdShow writes
// through a terminal-safe writer besides: no control or invisible
// character reaches the terminal.
func printAgent(w io.Writer, a view.Agent) {
	if !a.Reachable {
		fmt.Fprintf(w, "%s: unreachable: %s\n", termLine(a.Name), termLine(a.Reason))
		return
	}
	fmt.Fprintf(w, "%s: reachable (%s)\n", termLine(a.Name), termLine(a.Agent))
	if a.Snapshot == nil {
		return
	}
	for _, sp := range a.Snapshot.Spaces {
		for _, tab := range sp.Tabs {
			for _, c := range tab.Conversations {
				closed := ""
				if c.Closed {
					closed = " (closed)"
				}
				fmt.Fprintf(w, "  %s / %s / %s%s\n", termLine(sp.Title), termLine(tab.Title), termLine(c.Title), closed)
				for _, it := range c.Items {
					fmt.Fprintf(w, "    %s\n", itemLine(it))
				}
				for _, q := range c.Questions {
					fmt.Fprintf(w, "    ? %s  [%s, revision %d, id %s]\n", termLine(q.Title), termLine(q.Kind), q.Revision, termLine(q.ID))
					if q.Shortened {
						fmt.Fprintln(w, "      (text shortened)")
					}
					if q.Rationale != "" {
						fmt.Fprintf(w, "      %s\n", indent(q.Rationale, "      "))
					}
					for _, o := range q.Options {
						fmt.Fprintf(w, "      - %s\n", termLine(o.Label))
					}
					for _, f := range q.Fields {
						fmt.Fprintf(w, "      [%s]\n", termLine(f.Label))
					}
				}
			}
		}
	}
	for _, b := range a.Snapshot.Belt {
		fmt.Fprintf(w, "  belt: [%s]\n", termLine(b.Label))
	}
	for _, s := range a.Snapshot.Starters {
		fmt.Fprintf(w, "  starter: %s\n", termLine(s.Label))
	}
}

func itemLine(it wire.Item) string {
	switch it.Kind {
	case wire.KindLink:
		return fmt.Sprintf("[link] %s <%s>", termLine(it.Text), termLine(it.URL))
	case wire.KindToolCall:
		return fmt.Sprintf("[tool %s %s] %s", termLine(it.Tool.Name), termLine(it.Tool.Status), indent(it.Tool.Summary, "    "))
	case wire.KindText:
		if it.Role != "" {
			return termLine(it.Role) + ": " + indent(it.Text, "    ")
		}
	}
	return fmt.Sprintf("[%s] %s", termLine(it.Kind), indent(it.Text, "    "))
}

// indent cleans a multi-line string for the terminal and indents each of
// its lines after the first by pad.
func indent(s, pad string) string {
	return strings.ReplaceAll(sanitize.Terminal(s), "\n", "\n"+pad)
}
