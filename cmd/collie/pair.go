package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/skip2/go-qrcode"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/cli/hint"
)

// cmdPair asks the daemon for a single-use pairing offer and shows it: the
// URL (the secret rides in its fragment), a QR code of it, and the short
// code the device shows too.
func cmdPair(ctx context.Context, e *env, args []string) error {
	fs := newFlags("collie pair", e)
	asJSON := fs.Bool("json", false, "print JSON")
	noQR := fs.Bool("no-qr", false, "do not draw the QR code")
	local := fs.Bool("local", false, "show a link that only a browser on this machine can open")
	if err := parse(fs, args); err != nil {
		return err
	}
	paths, err := e.paths()
	if err != nil {
		return err
	}
	p, err := control.NewClient(paths.Control()).Pair(ctx)
	if err != nil {
		return err
	}
	// A loopback link is shown only when asked for: a newcomer scanning
	// it with a phone would get nothing and no reason. The secret made
	// for it is never shown, and expires unused.
	if p.Reach == control.ReachThisMachine && !*local {
		return hint.New("the pairing link would be "+linkBase(p.URL)+", an address only this machine can open: a phone cannot reach it",
			"to pair a phone, set public_url in [devices] of config.toml to the https:// address the phone opens "+
				"(tailscale serve, a reverse proxy such as Caddy, or this machine with your own certificate: see collie.toml(5) and docs/phone.md), "+
				"restart the daemon (systemctl --user restart collie) and run collie pair again; to pair a browser on this machine, run: collie pair --local")
	}
	if *asJSON {
		return writeJSON(e.stdout, p)
	}
	if !*noQR {
		qr, err := qrcode.New(p.URL, qrcode.Medium)
		if err != nil {
			return fmt.Errorf("draw the QR code: %w", err)
		}
		fmt.Fprint(e.stdout, qr.ToSmallString(false))
	}
	fmt.Fprintf(e.stdout, "Open this on the device to pair it (once, until %s):\n\n    %s\n\n", p.Expires.Local().Format(time.Kitchen), p.URL)
	fmt.Fprintf(e.stdout, "The device shows the code %s; pair only if it matches.\n", p.Code)
	if p.Fingerprint != "" {
		fmt.Fprintf(e.stdout, "The bridge's certificate fingerprint (SHA-256): %s\n", p.Fingerprint)
	}
	switch p.Reach {
	case control.ReachThisMachine:
		fmt.Fprintln(e.stdout, "Only a browser on this machine can open this link; to pair a phone, set public_url in [devices] of config.toml (collie.toml(5)).")
	case control.ReachNetwork:
		what := "the bridge's own address"
		if p.Fingerprint != "" {
			what += " under its self-signed certificate: the phone's browser warns about it, and cannot install the app or show notifications there"
		}
		fmt.Fprintf(e.stdout, "Note: this link is %s. For a phone, set public_url in [devices] of config.toml to an https:// address with a certificate the phone trusts (collie.toml(5)).\n", what)
	}
	return nil
}

// linkBase is a pairing URL without its fragment, which holds the secret.
func linkBase(u string) string {
	base, _, _ := strings.Cut(u, "#")
	return strings.TrimSuffix(base, "/")
}
