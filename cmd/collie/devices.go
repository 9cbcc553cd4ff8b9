package main

import (
	"context"
	"fmt"
	"time"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
)

// cmdRevoke cuts a paired device off.
func cmdRevoke(ctx context.Context, e *env, args []string) error {
	id, said, paths, err := daemonOne(e, "collie devices revoke", args, "give the device's id", "collie devices lists the ids")
	if err != nil {
		return err
	}
	if err := control.NewClient(paths.Control()).Revoke(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "revoked %s; it is cut off now\n", said)
	return nil
}

// cmdDevices lists paired devices.
func cmdDevices(ctx context.Context, e *env, args []string) error {
	return list[control.Device]{
		name: "collie devices",
		fetch: func(ctx context.Context, _ *env, paths config.Paths) ([]control.Device, error) {
			return control.NewClient(paths.Control()).Devices(ctx)
		},
		empty:   "no devices paired; pair one with: collie pair",
		columns: []string{"ID", "NAME", "PAIRED", "LAST SEEN"},
		row: func(d control.Device) []string {
			seen := "never"
			if !d.LastSeen.IsZero() {
				seen = d.LastSeen.Local().Format(time.DateTime)
			}
			return []string{d.ID, d.Name, d.PairedAt.Local().Format(time.DateTime), seen}
		},
	}.run(ctx, e, args)
}
