package deps

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

const module = "github.com/collie-linux/collie/"

// Sides of the module, as folders: each group under internal/ is one side
// or layer (see its doc comment). The bridge's side serves devices and
// reads agents; the agent's side is the runtime a durable agent is built
// on and the programs that ask one; both link the protocol and the Linux
// primitives below them.
var (
	bridgeSide   = []string{"internal/bridge/..."}
	agentSide    = []string{"internal/agent/..."}
	agentRuntime = []string{"internal/agent/durable/...", "internal/agent/callercheck", "internal/agent/runcmd", "internal/agent/runagent"}
	loginClient  = []string{"internal/login/loginclient", "internal/login/loginstore"}
	loginService = []string{"internal/login/loginservice", "internal/login/loginapi", "internal/login/loginhost"}
	testHelper   = []string{"testing", "internal/testkit/...", "internal/suite/...", "internal/agent/durable/durabletest",
		"internal/bridge/push/webpush/pushtest", "internal/login/loginwire/loginwiretest", "internal/protocol/bearer/bearertest"}
	binaries = []string{"cmd/collie", "cmd/collie-agent", "cmd/collie-hook"}
)

// rule is one rule of the layering: no package matched by From may depend
// on (import, directly or not) a package matched by Deny, except the
// packages matched by Except; or, with Only set, on no package of the
// module outside Only. Patterns are paths in the module ("internal/protocol/wire"),
// "x/..." for x and every package below it, or a standard package.
type rule struct {
	Name   string // names the spec ID it keeps, where there is one
	From   []string
	Except []string
	Deny   []string
	Only   []string // nil: Deny applies; else the whole allow-list
	Why    string
}

func cat(lists ...[]string) []string { return slices.Concat(lists...) }

var rules = []rule{
	{Name: "D6_only_the_bridge_links_the_device_API", From: []string{"..."},
		Except: []string{"cmd/collie", "internal/bridge", "internal/bridge/device/...", "internal/suite/...", "internal/testkit/devicetest"},
		Deny:   []string{"internal/bridge/device/..."},
		Why:    "the device API is the one way to an agent's answer route (D6); nothing below the bridge may reach it"},
	{Name: "D6_the_device_API_reaches_agents_only_through_the_bridge", From: []string{"internal/bridge/device/..."},
		Deny: []string{"internal/bridge/upstream", "internal/bridge/sources", "internal/bridge/control"},
		Why:  "a device's write goes to an agent only through Backend.Forward (bridge.Forward); the device API sees the protocol's types (wire, view), not the bridge's clients"},
	{Name: "D6_the_device_policy_decides_from_the_request_alone", From: []string{"internal/bridge/device/policy"},
		Only: []string{},
		Why:  "the device API's HTTP policy (hosts, origins, forwarded headers, rates) links no store, no handler and no protocol: what it lets through cannot depend on them"},
	{Name: "the_device_store_knows_no_HTTP", From: []string{"internal/bridge/device/store"},
		Deny: []string{"internal/bridge/device", "internal/bridge/device/policy", "internal/bridge/device/apierr", "internal/bridge/device/web"},
		Why:  "devices.json, pairing secrets and push subscriptions are kept apart from the policy that guards them and the handlers that serve them"},
	{Name: "the_device_refusals_link_only_the_protocol", From: []string{"internal/bridge/device/apierr"},
		Only: []string{"internal/protocol/..."},
		Why:  "the table of the device API's refusals is words and codes: the policy, the store and the handlers link it, it links none of them"},
	{Name: "D6_a_push_only_opens_the_web_app", From: []string{"internal/bridge/push/..."},
		Deny: []string{"internal/bridge/upstream", "internal/bridge/sources", "internal/bridge/device/...", "internal/bridge/control", "internal/bridge"},
		Why:  "a push notifies and opens the web app; nothing under internal/bridge/push can reach an agent's routes, a device's writes or the daemon"},
	{Name: "nothing_imports_the_bridge", From: []string{"..."},
		Except: []string{"cmd/collie", "internal/bridge", "internal/suite/e2e/..."},
		Deny:   []string{"internal/bridge"},
		Why:    "the bridge is the daemon that wires the rest; it is the top of the bridge's side"},
	{Name: "collie-hook_links_only_the_hook_path", From: []string{"cmd/collie-hook"},
		Only: []string{"internal/agent/ask/hook", "internal/protocol/...", "internal/linux/...", "internal/cli/hint", "internal/login/loginstore", "internal/login/loginwire"},
		Why:  "the hook program starts once per tool call: it links the hook's path and the agent admission, not collie ask's command line, setup's formats or the bridge"},
	{Name: "collie-agent_links_no_bridge_side_package", From: []string{"cmd/collie-agent"},
		Deny: bridgeSide,
		Why:  "the reference agent is built on the agent's runtime and the protocol only; the bridge's store, clients and device API are not its business"},
	{Name: "the_agent_side_links_no_bridge_side_package", From: agentSide,
		Deny: bridgeSide,
		Why:  "an agent built on internal/agent/durable, and the programs that ask it, must not carry the bridge in with them"},
	{Name: "the_login_client_links_no_login_service", From: loginClient,
		Deny: cat(loginService, bridgeSide),
		Why:  "the client half of agent login runs in the agent's environment: it links the contract (loginwire), never the service's token store, handlers or boards"},
	{Name: "the_protocol_links_only_the_protocol", From: []string{"internal/protocol/..."},
		Only: []string{"internal/protocol/..."},
		Why:  "both sides link the protocol, so it carries nothing of either side"},
	{Name: "the_linux_primitives_link_only_each_other", From: []string{"internal/linux/..."},
		Only: []string{"internal/linux/..."},
		Why:  "the system primitives sit under both sides and know nothing of Collie above them"},
	{Name: "the_cli_core_links_only_the_shared_layers", From: []string{"internal/cli/..."},
		Only: []string{"internal/cli/...", "internal/protocol/...", "internal/linux/..."},
		Why:  "both binaries share the command-line core, so it links neither side"},
	{Name: "nothing_links_the_suite", From: []string{"..."},
		Except: []string{"internal/suite/..."},
		Deny:   []string{"internal/suite/..."},
		Why:    "the tests over the whole tree are leaves: nothing depends on them"},
	{Name: "collie_runs_no_agent_command", From: []string{"cmd/collie"},
		Deny: []string{"internal/agent/runcmd"},
		Why:  "the bridge reads agents over the protocol and never runs an agent's commands; it links the agent runtime only to host agent sessions' boards in memory (internal/login/loginhost)"},
	{Name: "only_loginhost_hosts_boards", From: cat([]string{"internal/login/loginapi", "internal/login/loginservice", "internal/login/loginwire"}, bridgeSide),
		Except: []string{"internal/bridge"},
		Deny:   agentRuntime,
		Why:    "the device API, the agent service and the rest of the bridge's side reach an agent session's board only through loginhost's handler, over the protocol: none runs an agent's server"},
	{Name: "binaries_link_no_test_helper", From: binaries,
		Deny: testHelper,
		Why:  "test helpers (and the testing package) stay out of what is installed"},
	{Name: "X1_wire_is_a_leaf", From: []string{"internal/protocol/wire"},
		Only: []string{"internal/protocol/sanitize", "internal/protocol/jsonstrict"},
		Why:  "the protocol package is shared by both sides: it may use only the cleaner (X1-X6) and the strict decoder"},
	{Name: "X2_sanitize_is_a_leaf", From: []string{"internal/protocol/sanitize", "internal/protocol/jsonstrict"},
		Only: []string{},
		Why:  "the cleaner and the strict decoder sit under everything and import nothing of the module"},
	{Name: "view_is_types_of_the_protocol", From: []string{"internal/bridge/view"},
		Only: []string{"internal/protocol/wire", "internal/protocol/sanitize", "internal/protocol/jsonstrict"},
		Why:  "the bridge's model that the control socket and the device API send holds types only"},
	{Name: "C2_the_MCP_server_reaches_an_agent_only_over_its_socket", From: []string{"internal/agent/mcpserver"},
		Deny: cat(agentRuntime, bridgeSide, loginService),
		Why:  "collie mcp is a local program of a durable agent: it asks over the agent's socket, as collie ask does, and links neither the agent's runtime nor the bridge, so nothing but a device's tap can answer what it asks"},
	{Name: "C2_collie_run_runs_no_agent_command", From: []string{"internal/agent/runagent"},
		Deny: []string{"internal/agent/runcmd", "internal/agent/ask", "internal/agent/mcpserver"},
		Why:  "collie run's agent serves the runtime and supervises one command, the user's; it runs no belt or starter command, and asks nothing itself (its questions come over the socket, from the command's hooks)"},
	{Name: "runrecord_is_a_leaf", From: []string{"internal/agent/runrecord"},
		Only: []string{"internal/linux/atomicfile"},
		Why:  "collie doctor reads the runs' records without linking the run's agent"},
	{Name: "A1_audit_is_below_the_device_API", From: []string{"internal/bridge/audit"},
		Deny: []string{"internal/bridge/device/...", "internal/bridge", "internal/bridge/control", "internal/bridge/upstream", "internal/bridge/sources", "internal/bridge/view", "internal/bridge/doctor"},
		Why:  "the audit log records writes from a description of them (wire's registry), not from the code that serves them"},
}

// full is the import path of a pattern's package: the module's packages
// are written relative to it, in patterns and in messages.
func full(p string) string {
	if strings.HasPrefix(p, "internal/") || strings.HasPrefix(p, "cmd/") {
		return module + p
	}
	return p
}

// short is an import path as patterns and messages write it.
func short(p string) string { return strings.TrimPrefix(p, module) }

// match reports whether the import path p is matched by pattern.
func match(pattern, p string) bool {
	if pattern == "..." {
		return strings.HasPrefix(p, module)
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		base = full(base)
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == full(pattern)
}

func matchAny(patterns []string, p string) bool {
	return slices.ContainsFunc(patterns, func(pat string) bool { return match(pat, p) })
}

// graph is each package of the module, by import path, with every package
// it depends on, directly or not.
type graph map[string][]string

// check returns every way g breaks rules, one line each.
func check(g graph, rules []rule) []string {
	var out []string
	pkgs := slices.Sorted(func(yield func(string) bool) {
		for p := range g {
			if !yield(p) {
				return
			}
		}
	})
	for _, r := range rules {
		for _, p := range pkgs {
			if !matchAny(r.From, p) || matchAny(r.Except, p) {
				continue
			}
			for _, d := range g[p] {
				inModule := strings.HasPrefix(d, module)
				bad := false
				switch {
				case r.Only != nil:
					bad = inModule && !matchAny(r.Only, d)
				default:
					bad = matchAny(r.Deny, d)
				}
				if bad {
					out = append(out, fmt.Sprintf("%s: %s depends on %s (%s)", r.Name, short(p), short(d), r.Why))
				}
			}
		}
	}
	return out
}

// named returns the patterns of rules that match no package of g: a rule
// about a package renamed or gone would hold by saying nothing.
func named(g graph, rules []rule) []string {
	var out []string
	for _, r := range rules {
		for _, pat := range slices.Concat(r.From, r.Except, r.Deny, r.Only) {
			if pat == "..." || pat == "testing" {
				continue
			}
			found := false
			for p := range g {
				found = found || match(pat, p)
			}
			if !found {
				out = append(out, fmt.Sprintf("%s: %s is no package of the module", r.Name, pat))
			}
		}
	}
	return out
}

// pkg is what this test reads of `go list -json`.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	// IgnoredGoFiles are the files of other systems (Windows, macOS):
	// TestNoDeadExports reads them as callers too.
	IgnoredGoFiles []string
	Deps           []string
	Standard       bool
}

// listModule runs `go list -deps -json ./...` at the module's root and
// returns the module's packages (without tests) with their dependencies.
func listModule(t *testing.T) (graph, map[string]pkg) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		testenv.Unavailable(t, "the go command is not on PATH, so the dependency rules cannot be checked")
	}
	cmd := exec.Command(gobin, "list", "-deps", "-json", "./...")
	cmd.Dir = "../../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	g, pkgs := graph{}, map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if !strings.HasPrefix(p.ImportPath, module) {
			continue // the standard library and other modules
		}
		g[p.ImportPath], pkgs[p.ImportPath] = p.Deps, p
	}
	if len(g) < 10 {
		t.Fatalf("go list found %d packages of the module; the listing is broken", len(g))
	}
	return g, pkgs
}

// TestDeps holds the module to its layering rules.
func TestDeps(t *testing.T) {
	g, _ := listModule(t)
	for _, v := range named(g, rules) {
		t.Error(v)
	}
	for _, v := range check(g, rules) {
		t.Error(v)
	}
}

// TestRulesCatchBreaks breaks each rule in a copy of the module's real
// graph, one edge at a time, and wants check to name that rule: a rule
// that cannot fail is no rule.
func TestRulesCatchBreaks(t *testing.T) {
	g, _ := listModule(t)
	breaks := map[string][2]string{ // rule: the package and a dependency that breaks it
		"D6_only_the_bridge_links_the_device_API":                  {"internal/bridge/doctor", "internal/bridge/device"},
		"nothing_imports_the_bridge":                               {"internal/bridge/device", "internal/bridge"},
		"D6_the_device_API_reaches_agents_only_through_the_bridge": {"internal/bridge/device", "internal/bridge/upstream"},
		"collie-agent_links_no_bridge_side_package":                {"cmd/collie-agent", "internal/bridge/sources"},
		"collie-hook_links_only_the_hook_path":                     {"cmd/collie-hook", "internal/agent/ask"},
		"the_agent_side_links_no_bridge_side_package":              {"internal/agent/ask", "internal/bridge/upstream"},
		"the_login_client_links_no_login_service":                  {"internal/login/loginclient", "internal/login/loginservice"},
		"the_protocol_links_only_the_protocol":                     {"internal/protocol/bearer", "internal/linux/sockpath"},
		"the_linux_primitives_link_only_each_other":                {"internal/linux/sockpath", "internal/protocol/wire"},
		"the_cli_core_links_only_the_shared_layers":                {"internal/cli", "internal/agent/ask"},
		"nothing_links_the_suite":                                  {"internal/bridge/doctor", "internal/suite/e2e"},
		"collie_runs_no_agent_command":                             {"cmd/collie", "internal/agent/runcmd"},
		"only_loginhost_hosts_boards":                              {"internal/login/loginapi", "internal/agent/durable/board"},
		"binaries_link_no_test_helper":                             {"cmd/collie-agent", "testing"},
		"X1_wire_is_a_leaf":                                        {"internal/protocol/wire", "internal/linux/sockpath"},
		"X2_sanitize_is_a_leaf":                                    {"internal/protocol/sanitize", "internal/protocol/wire"},
		"view_is_types_of_the_protocol":                            {"internal/bridge/view", "internal/bridge/control"},
		"A1_audit_is_below_the_device_API":                         {"internal/bridge/audit", "internal/bridge/device"},
		"C2_the_MCP_server_reaches_an_agent_only_over_its_socket":  {"internal/agent/mcpserver", "internal/agent/durable/board"},
		"D6_a_push_only_opens_the_web_app":                         {"internal/bridge/push/ntfy", "internal/bridge/upstream"},
		"C2_collie_run_runs_no_agent_command":                      {"internal/agent/runagent", "internal/agent/runcmd"},
		"runrecord_is_a_leaf":                                      {"internal/agent/runrecord", "internal/protocol/wire"},
		"D6_the_device_policy_decides_from_the_request_alone":      {"internal/bridge/device/policy", "internal/bridge/device/store"},
		"the_device_store_knows_no_HTTP":                           {"internal/bridge/device/store", "internal/bridge/device/policy"},
		"the_device_refusals_link_only_the_protocol":               {"internal/bridge/device/apierr", "internal/bridge/device/store"},
	}
	for _, r := range rules {
		t.Run(r.Name, func(t *testing.T) {
			br, ok := breaks[r.Name]
			if !ok {
				t.Fatalf("no break for the rule %s: add one to this test", r.Name)
			}
			broken := graph{}
			for p, deps := range g {
				broken[p] = deps
			}
			from, dep := full(br[0]), full(br[1])
			if _, ok := g[from]; !ok {
				t.Fatalf("%s is no package of the module", br[0])
			}
			broken[from] = append(slices.Clone(g[from]), dep)
			found := false
			for _, v := range check(broken, []rule{r}) {
				found = found || strings.HasPrefix(v, r.Name+": "+br[0]+" depends on "+br[1]+" ")
			}
			if !found {
				t.Fatalf("%s depending on %s does not break the rule", br[0], br[1])
			}
		})
	}
}
