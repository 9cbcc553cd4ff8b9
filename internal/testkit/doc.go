// Package testkit is the group of test helpers: what a test does when the
// machine cannot run it (testenv), a real systemd user manager
// (systemdtest), certificates made by the test (tlstest), caddy
// (caddytest), an in-memory listener for synctest (memnet), a hostile agent
// (hostiletest), a buffer read while others write to it (testbuf), a
// paired device driving the device API (devicetest), a
// scripted model API for the real coding-agent clients
// (fakemodel) and the test run's summary (testsummary). No binary links
// them.
package testkit
