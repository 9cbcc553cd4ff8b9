package loginclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// ActionRefusal is the bridge's refusal of the agent-login action, as the
// platform's raft wrapper reported it when it failed: the HTTP status,
// and the code and sentence of the bridge's refusal (loginwire.ErrorBody),
// cleaned as untrusted text. Nothing else of the wrapper's output is
// kept.
type ActionRefusal struct {
	Status  int
	Code    string
	Message string
}

func (e *ActionRefusal) Error() string {
	s := fmt.Sprintf("the bridge refused the agent-login action (HTTP %d, %s)", e.Status, e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// maxReason caps the bridge's sentence as collie shows it.
const maxReason = 512

// wrapperFailure finds, in what the raft wrapper wrote when it failed, the
// bridge's answer to the action. The platform's CLI reports a service's
// refusal as "service action failed (HTTP STATUS); response body: BODY",
// in a JSON error envelope ({"ok":false,"error":{"message":...}}) with
// --json, or on an "Error:" line without it, on stdout or stderr. BODY
// must be the agent surface's refusal, with a code from its closed set or
// the listener's; its sentence is cleaned (sanitize.Line), cut, and
// dropped whole when it holds anything shaped like one of Collie's
// credentials. Nil when no such answer is there.
func wrapperFailure(outputs ...[]byte) *ActionRefusal {
	for _, out := range outputs {
		for _, msg := range wrapperMessages(out) {
			if r := parseActionFailure(msg); r != nil {
				return r
			}
		}
	}
	return nil
}

// wrapperMessages are the candidate messages in out: the message of each
// JSON error envelope line, and every line as it is.
func wrapperMessages(out []byte) []string {
	var msgs []string
	for _, line := range bytes.Split(out, []byte("\n")) {
		line = bytes.TrimSpace(line)
		var env struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if len(line) > 0 && line[0] == '{' && jsonstrict.Unmarshal(line, &env, jsonstrict.Open) == nil && env.Error.Message != "" {
			msgs = append(msgs, env.Error.Message)
		}
		msgs = append(msgs, string(line))
	}
	return msgs
}

// actionFailed is compiled on first use, not at every collie start-up.
var actionFailed = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\(HTTP (\d{3})\); response body: `) })

func parseActionFailure(msg string) *ActionRefusal {
	m := actionFailed().FindStringSubmatchIndex(msg)
	if m == nil {
		return nil
	}
	status, _ := strconv.Atoi(msg[m[2]:m[3]])
	var body loginwire.ErrorBody
	if err := json.NewDecoder(strings.NewReader(msg[m[1]:])).Decode(&body); err != nil {
		return nil
	}
	code := body.Error.Code
	if !loginwire.KnownCode(code) && !listenerCodes[code] {
		return nil
	}
	reason, _ := sanitize.Line(body.Error.Message, maxReason)
	if strings.Contains(reason, "collie_") {
		reason = "" // never a credential, whatever the bridge said
	}
	return &ActionRefusal{Status: status, Code: code, Message: reason}
}

// listenerCodes are the refusals of the listener in front of the agent
// surface (docs/agent-login.md).
var listenerCodes = map[string]bool{"wrong-host": true, "cross-site": true, "rate-limited": true, "bad-forwarded": true,
	loginwire.CodeNotFound: true, loginwire.CodeMethodNotAllowed: true}

// actionRefusedError is the error of a failed agent-login action whose
// refusal the bridge explained: its sentence, and the fix for its kind.
func actionRefusedError(r *ActionRefusal) error {
	fix := "the bridge's user sees the same in its journal (journalctl --user -u collie); run collie login again once it is fixed"
	switch {
	case r.Code == loginwire.CodeTemporarilyUnavailable && r.Status == 503:
		fix = "ask the bridge's user to fix what the bridge says (collie doctor on its host shows it too), then run collie login again"
	case r.Status == 401:
		fix = "the platform's proof of this agent was refused; check that the bridge has the platform's current key ([agents] platform_key_file), then run collie login again"
	}
	return hint.Wrap(r, fix)
}
