// Package systemdtest runs a real systemd user manager, and a real
// systemd-journald, for end-to-end tests of collie's units.
//
// A test asks for one with [Start]:
//
//	um := systemdtest.Start(t)
//	um.InstallUnit("demo@.socket", socketUnit)
//	um.InstallUnit("demo@.service", serviceUnit)
//	if out, err := um.Systemctl(ctx, "enable", "--now", "demo@x.socket"); err != nil {
//		t.Fatal(out, err)
//	}
//	out, err := um.Run(ctx, "/usr/bin/python3", "-c", client) // as the user
//	e, err := um.WaitJournal(ctx, func(e systemdtest.JournalEntry) bool {
//		return strings.HasPrefix(e["MESSAGE"], "LISTEN_FDS=1")
//	}, "_SYSTEMD_USER_UNIT=demo@x.service")
//
// Everything is torn down by t.Cleanup. Binaries a test builds for the
// manager to run go in [BinDir], which the test user can reach.
//
// # How it works
//
// The machines this project is built and tested on are Debian 12 (systemd
// 252) without systemd as PID 1, with hybrid cgroups (the v1 controllers,
// a cgroup2 tree at /sys/fs/cgroup/unified and the name=systemd v1 tree at
// /sys/fs/cgroup/systemd). A user manager can still run there, given what
// logind and user@.service would normally have set up for it:
//
//  1. A private mount namespace (unshare --mount --propagation private),
//     kept alive by a small root "holder" shell. Inside it, tmpfs is
//     mounted on /run/systemd, /run/user, /run/log and /var/log/journal, so
//     nothing the test does is seen by, or left on, the host. Mount
//     propagation is private, so these mounts never reach the host.
//  2. /run/systemd/system is created: sd_booted() checks for it, and the
//     manager and systemctl behave as on a booted system only if it
//     exists. So is /run/systemd/unit-root, which PID 1 would make and a
//     manager needs to sandbox a unit (ProtectSystem= and the like).
//  3. systemd-journald runs in the namespace on its own (not socket
//     activated: it binds /run/systemd/journal/{socket,stdout,dev-log}
//     itself). A drop-in in /run/systemd/journald.conf.d sets
//     Storage=persistent on the namespace's tmpfs /var/log/journal,
//     because per-user journal files (user-UID.journal) only exist with
//     persistent storage; and /run/systemd/journal/flushed is created so
//     that journald writes to /var at once, as it would after
//     systemd-journal-flush.service. Reading kmsg and audit is turned off
//     (the host's kernel log is not ours) and so is rate limiting.
//  4. /run/user/UID is created, 0700 and owned by the user, as
//     pam_systemd would.
//  5. On a hybrid machine the cgroup2 tree is bind-mounted over
//     /sys/fs/cgroup inside the namespace. systemd chooses its cgroup
//     mode from what it finds there, so journald and the manager run in
//     unified (cgroup v2 only) mode, as on current distributions, and
//     only one hierarchy has to be set up and cleaned (the v1 controller
//     hierarchies are not delegated to user managers by systemd anyway).
//     The host's own view is unchanged.
//  6. A delegated cgroup user.slice/user-UID.slice/user@UID.service is
//     created and chowned to the user the way systemd delegates (the
//     directory, cgroup.procs, cgroup.subtree_control, cgroup.threads).
//     The manager cannot create its units' cgroups unless its own cgroup
//     is writable, and journald derives _SYSTEMD_USER_UNIT and
//     _SYSTEMD_OWNER_UID from exactly this path, so the names matter.
//  7. /lib/systemd/systemd --user is started as the user in that cgroup,
//     with XDG_RUNTIME_DIR=/run/user/UID and a fresh HOME, and
//     --log-target=journal (outside user@.service its stderr is not the
//     journal, so by default it would log to stderr). Start returns once
//     `systemctl --user is-system-running --wait` says running or
//     degraded.
//
// Commands run in the namespace through nsenter(1), and as the user
// through setpriv(1). They are created directly in a cgroup
// user.slice/user-UID.slice/systemdtest-run.scope (clone3 with
// CLONE_INTO_CGROUP, as the manager is in its own), so that teardown
// finds and kills anything they leave behind. systemctl --user talks to
// the manager over its private socket $XDG_RUNTIME_DIR/systemd/private
// and needs no D-Bus. Where the
// dbus-user-session package is installed (it is on these machines), the
// manager listens on $XDG_RUNTIME_DIR/bus (dbus.socket) and the session
// bus is started on first use; BusAddress is then set and is passed to
// user commands as DBUS_SESSION_BUS_ADDRESS, so go-systemd's D-Bus client
// works as it would in a login session.
//
// Teardown (registered with t.Cleanup) sends SIGTERM to the manager (a
// user manager then starts exit.target, stopping its units), kills
// whatever is left in user-UID.slice, stops journald, ends the holder (the
// namespace and its tmpfs mounts go with it), removes the cgroups and the
// home directory, and reports an error if any process of the test user
// survived. If a test binary dies without teardown, the manager and
// journald get SIGKILL through the parent-death signal, the holder sees
// its stdin close and kills the rest of the user's slice (cgroup.kill),
// and the next Start removes the empty cgroups and the old home.
//
// # Known limits
//
// journald learns a line's unit from the sender's cgroup when it
// processes the line. A service that logs and exits at once may be gone
// by then, and its last lines are stored without _SYSTEMD_USER_UNIT (seen
// here for two or three in ten runs of a service that only echoes, on a
// loaded machine; upstream systemd has the same race). Tests that look
// lines up by unit should keep the service running until they have found
// them.
//
// /dev/log is left as the host has it (absent on these machines), so
// syslog(3) does not reach the test's journald; the native protocol and
// units' stdout and stderr do.
//
// # The test user
//
// The manager runs as a dedicated account, collie-e2e ([UserName]),
// created on first use with `useradd --user-group --no-create-home
// --home-dir /nonexistent --shell /usr/sbin/nologin` and kept afterwards:
// deleting and re-creating it on every run races with other test binaries
// and gains nothing. It is a regular account (UID ≥ 1000), not a --system
// one, because journald keeps system users' messages in the system journal
// and only gives regular users their own user-UID.journal. Each Start gets
// a fresh HOME under the temporary directory (the passwd entry's home is
// not used: systemd and the XDG variables follow $HOME), removed on
// teardown.
//
// Only one user manager runs at a time on a machine: Start takes an
// exclusive lock on /run/lock/collie-systemdtest.lock, held until
// teardown, so parallel tests and test binaries (go test ./... runs
// packages in parallel) wait for each other rather than fight over the
// user's cgroup.
//
// # Requirements
//
// Root; Linux 5.7 or later with a cgroup2 hierarchy mounted (unified or
// hybrid; cgroup.kill, from 5.14, is used where there); a host whose PID
// 1 is not systemd (on a systemd host the cgroup tree belongs to it); and
// these Debian packages, all in the base
// image of the project's machines: systemd (systemd, systemd-journald,
// systemctl, journalctl), util-linux (unshare, nsenter, setpriv), passwd
// (useradd), and dash or another /bin/sh. dbus-user-session and
// dbus-daemon are optional (the session bus). The tests of this package
// also use python3 (/usr/bin/python3) as a small socket-activated service
// and client.
//
// Where these are missing the test is skipped with the reason, except when
// the environment variable CI is "true": there it fails, so that CI cannot
// pass by skipping.
package systemdtest
