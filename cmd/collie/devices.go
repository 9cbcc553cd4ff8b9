package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// cmdRevoke cuts a paired device off.
func cmdRevoke(ctx context.Context, e *env, args []string) error {
	ids, err := parseArgs(newFlags("collie devices revoke", e), args, 0, -1)
	if err != nil {
		return err
	}
	if len(ids) != 1 {
		return &cli.UsageError{Err: hint.New("give the device's id: collie devices revoke ID", "collie devices lists the ids")}
	}
	paths, err := e.paths()
	if err != nil {
		return err
	}
	if err := control.NewClient(paths.Control()).Revoke(ctx, ids[0]); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "revoked %s; it is cut off now\n", ids[0])
	return nil
}

// cmdDevices lists paired devices.
func cmdDevices(ctx context.Context, e *env, args []string) error {
	fs := newFlags("collie devices", e)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	paths, err := e.paths()
	if err != nil {
		return err
	}
	devs, err := control.NewClient(paths.Control()).Devices(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if devs == nil {
			devs = []control.Device{} // no devices is [], not null
		}
		return writeJSON(e.stdout, devs)
	}
	if len(devs) == 0 {
		fmt.Fprintln(e.stdout, "no devices paired; pair one with: collie pair")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tPAIRED\tLAST SEEN")
	for _, d := range devs {
		seen := "never"
		if !d.LastSeen.IsZero() {
			seen = d.LastSeen.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sanitize.TerminalLine(d.ID), sanitize.TerminalLine(d.Name), d.PairedAt.Local().Format(time.DateTime), seen)
	}
	return tw.Flush()
}
