// Package apierr is the device API's one table of refusals: for each
// refusal, its code, its HTTP status, the sentence a device shows and,
// kept apart, the fix. Every refusal the device API writes is a row of
// it (Refuse takes a Reason, never a code or a sentence), so one refusal
// is worded once, and docs/device-api.md's list of codes is checked
// against it both ways. The agent's own refusals, which the device API
// passes on as the agent gave them, are the one exception: Relay.
//
// It imports the protocol (for its shared codes) and the standard library
// only; the device API's policy, store and handlers import it.
package apierr

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Code is a refusal's code on the wire: stable, for programs.
type Code string

// The device API's codes. Several refusals may share one (not-paired has
// two); each has one row per refusal.
const (
	WrongHostCode        Code = "wrong-host"
	BadForwardedCode     Code = "bad-forwarded"
	CrossSiteCode        Code = "cross-site"
	MethodNotAllowedCode Code = "method-not-allowed"
	RateLimitedCode      Code = "rate-limited"
	NotPairedCode        Code = "not-paired"
	RevokedCode          Code = "revoked"
	PairingRefusedCode   Code = "pairing-refused"
	ConfirmAlwaysCode    Code = "confirm-always"
	ConfirmRefusedCode   Code = "confirm-refused"
	PushOffCode          Code = "push-off"
	BadSubscriptionCode  Code = "bad-subscription"
	EndpointTakenCode    Code = "push-endpoint-taken"
	StoreFailedCode      Code = "store-failed"
	InternalCode         Code = "internal"
	AgentUnreachableCode Code = "agent-unreachable"

	// Codes the device API shares with the agent protocol.
	BadRequestCode      Code = wire.CodeBadRequest
	BodyTooLargeCode    Code = wire.CodeBodyTooLarge
	NotFoundCode        Code = wire.CodeNotFound
	UnknownTargetCode   Code = wire.CodeUnknownTarget
	UnknownQuestionCode Code = wire.CodeUnknownQuestion
	StaleRevisionCode   Code = wire.CodeStaleRevision
	AlreadyDecidedCode  Code = wire.CodeAlreadyDecided
	BadAnswerCode       Code = wire.CodeBadAnswer
)

// Reason is one refusal: a row of the table.
type Reason int

// The refusals. A row's Message and Hint may take arguments (fmt verbs):
// New and Refuse fill the message's first, then the hint's.
const (
	WrongHost Reason = iota + 1
	BadForwarded
	CrossSiteRead
	CrossSiteWrite
	CrossSiteAgent
	MethodNotAllowed
	RateLimitedSource
	RateLimitedDevice
	NoCredential
	UnknownCredential
	Revoked
	BadRequest
	BodyTooLarge
	BadSince
	PairingUnknown
	PairingExpired
	NoSuchWrite
	UnknownAgent
	NoConversation
	NoQuestion
	StaleRevision
	AlreadyDecided
	NoAlwaysAllow
	ConfirmAlways
	ConfirmExpired
	ConfirmMismatch
	PushOff
	SubscriptionTooLarge
	BadSubscription
	EndpointTaken
	SubscribeNotSaved
	UnsubscribeNotSaved
	DeviceNotSaved
	ReceiptsUnread
	NoStreaming
	AgentUnreachable
	reasons // the count, plus one
)

// Row is a refusal as the device API says it.
type Row struct {
	Code    Code
	Status  int
	Message string // a sentence, without a final full stop; fmt verbs for its arguments
	Hint    string // what to do, or ""; fmt verbs for its arguments
}

const (
	pairAgain = "pair it again with: collie pair"
	seeLog    = "see journalctl --user -u collie"
)

// table is every refusal of the device API.
var table = [reasons]Row{
	WrongHost:         {WrongHostCode, http.StatusMisdirectedRequest, "this is not the address of Collie's device API", "open the address collie pair prints"},
	BadForwarded:      {BadForwardedCode, http.StatusBadRequest, "the reverse proxy in front of the bridge sent a forwarded header that does not parse", "set the proxy to send %s as it forwards, or change proxy_headers in [devices] of config.toml"},
	CrossSiteRead:     {CrossSiteCode, http.StatusForbidden, "this bridge answers only its own page", ""},
	CrossSiteWrite:    {CrossSiteCode, http.StatusForbidden, "a write needs the Collie-Write: 1 header from this bridge's own page", ""},
	CrossSiteAgent:    {CrossSiteCode, http.StatusForbidden, "the agent surface answers programs, never a web page", ""},
	MethodNotAllowed:  {MethodNotAllowedCode, http.StatusMethodNotAllowed, "%s is not a route of the device API", ""},
	RateLimitedSource: {RateLimitedCode, http.StatusTooManyRequests, "too many requests from this address: %s; try again %s", ""},
	RateLimitedDevice: {RateLimitedCode, http.StatusTooManyRequests, "too many writes from this device: %s; try again %s", ""},
	NoCredential: {NotPairedCode, http.StatusUnauthorized,
		"this browser sent no sign-in: it was never paired with this bridge, or its sign-in was cleared (its cookies were removed or expired)", pairAgain},
	UnknownCredential: {NotPairedCode, http.StatusUnauthorized,
		"this device's sign-in matches no device this bridge knows (its list of paired devices was reset, or the device was revoked long ago)", pairAgain},
	Revoked:              {RevokedCode, http.StatusUnauthorized, "this device was revoked (collie devices revoke)", pairAgain},
	BadRequest:           {BadRequestCode, http.StatusBadRequest, "%s", ""},
	BodyTooLarge:         {BodyTooLargeCode, http.StatusRequestEntityTooLarge, "%s", ""},
	BadSince:             {BadRequestCode, http.StatusBadRequest, "since must be a time like 2026-12-02T10:00:00Z", ""},
	PairingUnknown:       {PairingRefusedCode, http.StatusForbidden, "this pairing code is not valid: it was used already, or never made; run collie pair again", ""},
	PairingExpired:       {PairingRefusedCode, http.StatusForbidden, "this pairing code has expired; run collie pair again", ""},
	NoSuchWrite:          {NotFoundCode, http.StatusNotFound, "there is no write called %q", "use one of %s"},
	UnknownAgent:         {UnknownTargetCode, http.StatusNotFound, "no durable agent called %q is attached", "read /api/v1/state for the list"},
	NoConversation:       {NotFoundCode, http.StatusNotFound, "agent %q has no conversation %q; it may have been removed", ""},
	NoQuestion:           {UnknownQuestionCode, http.StatusNotFound, "there is no such open question; it may have been answered or withdrawn", ""},
	StaleRevision:        {StaleRevisionCode, http.StatusConflict, "the question changed (revision %d, not %d); read it again before you answer", ""},
	AlreadyDecided:       {AlreadyDecidedCode, http.StatusConflict, "this question was answered already, by %s at %s", ""},
	NoAlwaysAllow:        {BadAnswerCode, http.StatusUnprocessableEntity, "this question does not offer always allow", ""},
	ConfirmAlways:        {ConfirmAlwaysCode, http.StatusPreconditionRequired, "always allow lets every later call in this scope through unasked; tap again to confirm", ""},
	ConfirmExpired:       {ConfirmRefusedCode, http.StatusPreconditionRequired, "the confirmation for always allow has expired or was used; tap always allow again", ""},
	ConfirmMismatch:      {ConfirmRefusedCode, http.StatusPreconditionRequired, "the confirmation for always allow was made for another question, revision, option or device; tap always allow again", ""},
	PushOff:              {PushOffCode, http.StatusNotFound, "Web Push is not turned on for this bridge", "ask whoever runs Collie to turn on webpush in [push] of config.toml"},
	SubscriptionTooLarge: {BadSubscriptionCode, http.StatusRequestEntityTooLarge, "the subscription is larger than the bridge takes", ""},
	BadSubscription:      {BadSubscriptionCode, http.StatusBadRequest, "%s", ""},
	EndpointTaken:        {EndpointTakenCode, http.StatusConflict, "this browser's push subscription belongs to another paired device; the page asks the browser for a new one", ""},
	SubscribeNotSaved:    {StoreFailedCode, http.StatusInternalServerError, "the bridge could not save the subscription; " + seeLog, ""},
	UnsubscribeNotSaved:  {StoreFailedCode, http.StatusInternalServerError, "the bridge could not save the change; " + seeLog, ""},
	DeviceNotSaved:       {InternalCode, http.StatusInternalServerError, "the bridge could not save the device", seeLog},
	ReceiptsUnread:       {InternalCode, http.StatusInternalServerError, "the bridge could not read the receipts", seeLog},
	NoStreaming:          {InternalCode, http.StatusInternalServerError, "streaming is not supported here", ""},
	AgentUnreachable:     {AgentUnreachableCode, http.StatusBadGateway, "%s", ""},
}

// Codes are the codes of the table, each once.
func Codes() []Code {
	seen := map[Code]bool{}
	var out []Code
	for _, row := range table[1:] {
		if !seen[row.Code] {
			seen[row.Code] = true
			out = append(out, row.Code)
		}
	}
	return out
}

// Reply is one refusal as it is written: its row, with the arguments
// filled in.
type Reply struct {
	Code    Code
	Status  int
	Message string
	Hint    string
}

// New fills in reason's row with args: the message's verbs first, then
// the hint's.
func New(reason Reason, args ...any) Reply {
	if reason <= 0 || reason >= reasons {
		panic(fmt.Sprintf("apierr: reason %d is not a row of the table", reason))
	}
	row := table[reason]
	n := min(verbs(row.Message), len(args))
	out := Reply(row)
	if verbs(row.Message) > 0 {
		out.Message = fmt.Sprintf(row.Message, args[:n]...)
	}
	if verbs(row.Hint) > 0 {
		out.Hint = fmt.Sprintf(row.Hint, args[n:]...)
	}
	return out
}

// verbs counts the fmt verbs of a format.
func verbs(format string) int {
	return strings.Count(format, "%") - 2*strings.Count(format, "%%")
}

// Refuse writes reason's refusal, and returns it (for the audit log).
func Refuse(w http.ResponseWriter, reason Reason, args ...any) Reply {
	r := New(reason, args...)
	r.Write(w)
	return r
}

// Body is the refusal as the device API's error reply.
func (r Reply) Body() ErrorBody {
	var e ErrorBody
	e.Error.Code, e.Error.Message, e.Error.Hint = string(r.Code), r.Message, r.Hint
	return e
}

// Write writes the refusal as the device API's error reply.
func (r Reply) Write(w http.ResponseWriter) { JSON(w, r.Status, r.Body()) }

// Relay passes on an agent's own refusal of a write (err, which holds
// ref) with the agent's status and code: the one reply of the device API
// whose code is not a row of the table.
func Relay(w http.ResponseWriter, ref *wire.Refused, err error) {
	var e ErrorBody
	e.Error.Code, e.Error.Message = ref.Code, err.Error()
	JSON(w, ref.Status, e)
}

// ErrorBody is the device API's error reply: the protocol's error (code
// and message) and, apart from the message, the fix when there is one, so
// a device can show it as such.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Hint    string `json:"hint,omitempty"`
	} `json:"error"`
}

// JSON writes v as a JSON reply with status, never cached or sniffed:
// the device API's one way to write JSON.
func JSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
