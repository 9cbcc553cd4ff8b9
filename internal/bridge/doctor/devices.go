package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/collie-linux/collie/internal/bridge/control"
)

// checkDeviceListener checks [devices] of config.toml as the daemon will
// use it (loopback, or TLS beyond it) and, while the daemon runs, that
// something listens there.
func checkDeviceListener(ctx context.Context, e *Env) []Row {
	cfg, path, skipped := loadConfig(e)
	if skipped != nil {
		return skipped
	}
	d := cfg.Devices
	addr, on := d.DeviceListen()
	if !on {
		return []Row{ok("the device API is off (listen = \"\" in [devices] of %s)", path)}
	}
	edit := "edit [devices] in " + path + " (collie.toml(5))"
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return []Row{fail(edit, "the device listen address %q is not host:port", addr)}
	}
	loopback := isLoopback(host)
	useTLS := d.TLSCert != "" || !loopback
	switch d.TLS {
	case "", "auto":
	case "on":
		useTLS = true
	case "off":
		if !loopback {
			return []Row{fail("remove tls = \"off\" from [devices] in "+path,
				"plain HTTP is refused on %s, which is reachable beyond this machine", addr)}
		}
		useTLS = false
	default:
		return []Row{fail(edit, "tls = %q in [devices] is not known; it is \"auto\", \"on\" or \"off\"", d.TLS)}
	}
	if (d.TLSCert == "") != (d.TLSKey == "") {
		return []Row{fail(edit, "[devices] has one of tls_cert and tls_key; give both, or neither")}
	}
	mode := "plain HTTP, loopback only"
	switch {
	case d.TLSCert != "":
		mode = "TLS with " + d.TLSCert
	case useTLS:
		mode = "TLS with a self-signed certificate"
	}

	if e.Daemon == nil {
		return []Row{notRunning(e)}
	}
	cctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	if _, err := e.Daemon.Agents(cctx); errors.Is(err, control.ErrNotRunning) {
		return []Row{notRunning(e)}
	} else if err != nil {
		return []Row{skip("see the daemon row", "the daemon does not answer")}
	}
	if port == "0" {
		return []Row{ok("the device API listens on a port the kernel chose on %s (%s); collie pair shows its URL", host, mode)}
	}
	if e.Dial == nil {
		return []Row{ok("the device API is set to listen on %s (%s)", addr, mode)}
	}
	if err := e.Dial(cctx, dialAddr(host, port)); err != nil {
		return []Row{fail("see why: journalctl --user -u collie -p err", "the daemon runs, but nothing listens on %s (%v)", addr, err)}
	}
	return []Row{ok("listening on %s (%s)", addr, mode)}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// dialAddr is where to reach a listener on host: on every address means
// on loopback too.
func dialAddr(host, port string) string {
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// dialTCP connects to addr and closes the connection.
func dialTCP(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("%w", err)
	}
	return c.Close()
}
