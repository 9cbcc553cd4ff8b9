package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Inputs of the ask tools. Every one takes the question, optional
// details, and an optional timeout in seconds.
type (
	yesNoIn struct {
		Question string `json:"question"`
		Details  string `json:"details,omitempty"`
		Timeout  int64  `json:"timeout,omitempty"`
	}
	choiceIn struct {
		Question string   `json:"question"`
		Details  string   `json:"details,omitempty"`
		Options  []string `json:"options"`
		Timeout  int64    `json:"timeout,omitempty"`
	}
	formIn struct {
		Question string      `json:"question"`
		Details  string      `json:"details,omitempty"`
		Fields   []formField `json:"fields"`
		Timeout  int64       `json:"timeout,omitempty"`
	}
	formField struct {
		Name  string `json:"name"`
		Label string `json:"label,omitempty"`
	}
	notifyIn struct {
		Message string `json:"message"`
	}
)

// Outputs: the answer, and the note the human gave with it, if any.
type (
	textOut struct {
		Answer string `json:"answer"`
		Note   string `json:"note,omitempty"`
	}
	formOut struct {
		Answer map[string]string `json:"answer"`
		Note   string            `json:"note,omitempty"`
	}
	notifyOut struct {
		Posted bool `json:"posted"`
	}
)

const timeoutHelp = "Seconds to wait for the answer before giving up (denied by default): 1 to 3600; default 300 unless collie mcp was started with another --timeout."

func (s *Server) addTools() {
	details := str("More context for the user, shown under the question: why you ask, what happens next (up to 2048 bytes; newlines kept).", 0, sanitize.RationaleBytes)
	question := str("The question, one line, as the user should read it on their phone (up to 256 bytes).", 1, sanitize.TitleBytes)
	timeout := &schema{Type: "integer", Description: timeoutHelp, Minimum: ptr(1.0), Maximum: ptr(MaxTimeout.Seconds())}

	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "ask_yes_no",
		Title: "Ask the user yes or no",
		Description: "Ask the user a yes/no question on their phone and wait for their tap. Returns {\"answer\": \"yes\"} or {\"answer\": \"no\"}, " +
			"with the user's note when they wrote one. Use it before anything the user should approve. " +
			"No answer in time, a withdrawn question or an unreachable Collie is a tool error: do not go ahead.",
		InputSchema:  obj(props{"question": question, "details": details, "timeout": timeout}, "question"),
		OutputSchema: obj(props{"answer": {Type: "string", Enum: []any{"yes", "no"}}, "note": str("", 0, 0)}, "answer"),
	}, func(ctx context.Context, req *mcp.CallToolRequest, in yesNoIn) (*mcp.CallToolResult, textOut, error) {
		rep, err := s.askHuman(ctx, req, wire.AskRequest{Kind: wire.AskYesNo}, in.Question, in.Details, in.Timeout)
		if err != nil || len(rep.OptionIDs) != 1 {
			return nil, textOut{}, orNoAnswer(err)
		}
		return nil, textOut{Answer: rep.OptionIDs[0], Note: rep.Reason}, nil
	})

	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "ask_choice",
		Title: "Ask the user to choose",
		Description: "Ask the user to pick one of 2 to 32 options on their phone and wait. Returns {\"answer\": \"<the chosen option, exactly as given>\"}. " +
			"No answer in time, a withdrawn question or an unreachable Collie is a tool error.",
		InputSchema: obj(props{"question": question, "details": details, "timeout": timeout,
			"options": {Type: "array", Description: "The options, each a short label (up to 128 bytes), all different.",
				Items: str("", 1, sanitize.LabelBytes), MinItems: ptr(2), MaxItems: ptr(wire.MaxAskOptions)}}, "question", "options"),
		OutputSchema: obj(props{"answer": str("", 0, 0), "note": str("", 0, 0)}, "answer"),
	}, func(ctx context.Context, req *mcp.CallToolRequest, in choiceIn) (*mcp.CallToolResult, textOut, error) {
		r := wire.AskRequest{Kind: wire.AskChoice}
		labels, seen := map[string]string{}, map[string]bool{}
		for i, o := range in.Options {
			label, err := cleanLabel("option", o)
			if err != nil {
				return nil, textOut{}, err
			}
			if seen[label] {
				return nil, textOut{}, fmt.Errorf("the option %q is used twice; give every option different words", label)
			}
			seen[label] = true
			id := fmt.Sprintf("c%d", i+1)
			labels[id] = o
			r.Options = append(r.Options, wire.Option{ID: id, Label: label})
		}
		rep, err := s.askHuman(ctx, req, r, in.Question, in.Details, in.Timeout)
		if err != nil || len(rep.OptionIDs) != 1 || labels[rep.OptionIDs[0]] == "" {
			return nil, textOut{}, orNoAnswer(err)
		}
		return nil, textOut{Answer: labels[rep.OptionIDs[0]], Note: rep.Reason}, nil
	})

	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "ask_text",
		Title: "Ask the user for a line of text",
		Description: "Ask the user to type one line (a name, a value, a short instruction) on their phone and wait. Returns {\"answer\": \"<what they typed>\"}. " +
			"Never ask for a password or a secret key this way. No answer in time, a withdrawn question or an unreachable Collie is a tool error.",
		InputSchema:  obj(props{"question": question, "details": details, "timeout": timeout}, "question"),
		OutputSchema: obj(props{"answer": str("", 0, 0), "note": str("", 0, 0)}, "answer"),
	}, func(ctx context.Context, req *mcp.CallToolRequest, in yesNoIn) (*mcp.CallToolResult, textOut, error) {
		rep, err := s.askHuman(ctx, req, wire.AskRequest{Kind: wire.AskLine}, in.Question, in.Details, in.Timeout)
		if err != nil {
			return nil, textOut{}, err
		}
		return nil, textOut{Answer: rep.Text, Note: rep.Reason}, nil
	})

	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "ask_form",
		Title: "Ask the user to fill in a short form",
		Description: "Ask the user to fill in 1 to 32 named fields on their phone and wait. Returns {\"answer\": {\"<name>\": \"<value>\", ...}} with every field. " +
			"No answer in time, a withdrawn question or an unreachable Collie is a tool error.",
		InputSchema: obj(props{"question": question, "details": details, "timeout": timeout,
			"fields": {Type: "array", Description: "The fields, in the order shown.", MinItems: ptr(1), MaxItems: ptr(wire.MaxAskOptions),
				Items: obj(props{
					"name":  {Type: "string", Description: "The field's key in the answer: letters, digits, '.', '_' or '-', all different.", Pattern: `^[A-Za-z0-9._-]{1,64}$`},
					"label": str("What the user reads next to the field (default: the name; up to 128 bytes).", 0, sanitize.LabelBytes),
				}, "name")}}, "question", "fields"),
		OutputSchema: obj(props{"answer": {Type: "object", AdditionalProperties: str("", 0, 0)}, "note": str("", 0, 0)}, "answer"),
	}, func(ctx context.Context, req *mcp.CallToolRequest, in formIn) (*mcp.CallToolResult, formOut, error) {
		r := wire.AskRequest{Kind: wire.AskForm}
		for _, f := range in.Fields {
			label := f.Label
			if strings.TrimSpace(label) == "" {
				label = f.Name
			}
			label, err := cleanLabel("field label", label)
			if err != nil {
				return nil, formOut{}, err
			}
			r.Fields = append(r.Fields, wire.Field{ID: f.Name, Label: label})
		}
		rep, err := s.askHuman(ctx, req, r, in.Question, in.Details, in.Timeout)
		if err != nil {
			return nil, formOut{}, err
		}
		vals := map[string]string{}
		for _, f := range in.Fields {
			vals[f.Name], _ = sanitize.Block(rep.Values[f.Name], sanitize.SendMaxBytes)
		}
		return nil, formOut{Answer: vals, Note: rep.Reason}, nil
	})

	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "notify",
		Title: "Tell the user something",
		Description: "Post a message to the user in this session's conversation on their phone or browser. It asks nothing and returns at once; " +
			"it does not send a push notification. Use it for progress or a result the user may want to read later.",
		InputSchema:  obj(props{"message": str("The message, up to 32768 bytes; newlines kept.", 1, sanitize.SendMaxBytes)}, "message"),
		OutputSchema: obj(props{"posted": {Type: "boolean"}}, "posted"),
	}, func(ctx context.Context, req *mcp.CallToolRequest, in notifyIn) (*mcp.CallToolResult, notifyOut, error) {
		if err := sanitize.CheckSend(in.Message); err != nil {
			return nil, notifyOut{}, fmt.Errorf("the message: %w", err)
		}
		err := s.inConversation(ctx, req, func(conv string) error {
			if conv == "" {
				return errors.New("this durable agent keeps no conversations for local programs, so it cannot show a message; ask a question instead")
			}
			return s.agent.note(ctx, conv, in.Message)
		})
		if err != nil {
			return nil, notifyOut{}, s.explain(err)
		}
		return nil, notifyOut{Posted: true}, nil
	})

	s.addApprove()
}

// askHuman asks r in the session's conversation and waits for its
// decision. It returns the reply only for an answer; anything else (no
// answer in time, withdrawn, refused, unreachable, cancelled) is an error
// whose text tells the model what happened and what to do.
func (s *Server) askHuman(ctx context.Context, req *mcp.CallToolRequest, r wire.AskRequest, title, details string, timeoutSecs int64) (wire.AskReply, error) {
	timeout := s.cfg.Timeout
	if timeoutSecs > 0 {
		timeout = min(time.Duration(timeoutSecs)*time.Second, MaxTimeout)
	}
	var changed bool
	r.Title, changed = sanitize.Line(title, sanitize.TitleBytes)
	if strings.TrimSpace(r.Title) == "" {
		return wire.AskReply{}, errors.New("the question is empty; give it as one line of text")
	}
	if changed {
		// A cut or cleaned question says so under it, not by hiding words.
		details = title + "\n\n" + details
	}
	var cut bool
	r.Rationale, cut = hook.Excerpt(strings.TrimSpace(details), sanitize.RationaleBytes)
	r.Shortened = changed || cut // the card says "Text shortened" (X3)
	return s.ask(ctx, req, r, timeout)
}

// ask asks r (its kind, wording and options made) and waits. A call the
// client cancels withdraws the question at once.
func (s *Server) ask(ctx context.Context, req *mcp.CallToolRequest, r wire.AskRequest, timeout time.Duration) (wire.AskReply, error) {
	r.RequestID = newID("mcp")
	r.TimeoutSeconds = int64(max(timeout.Round(time.Second)/time.Second, 1))
	if err := r.Validate(); err != nil {
		return wire.AskReply{}, fmt.Errorf("the question cannot be asked: %w", err)
	}
	stop := s.progress(ctx, req, timeout)
	var rep wire.AskReply
	err := s.inConversation(ctx, req, func(conv string) error {
		r.Conversation = conv
		var err error
		rep, err = s.agent.ask(ctx, r)
		return err
	})
	stop()
	if ctx.Err() != nil {
		if w, werr := s.agent.withdraw(ctx, r.RequestID); werr == nil && w.Status == wire.StatusAnswered {
			s.cfg.Log.Info("a cancelled call's question was answered first", "question", w.Question)
		}
		return wire.AskReply{}, errors.New("the call was cancelled; the question was withdrawn from the user's device")
	}
	if err != nil {
		return wire.AskReply{}, s.explain(err)
	}
	rep.Reason, _ = sanitize.Line(rep.Reason, wire.ReasonBytes)
	rep.Text, _ = sanitize.Block(rep.Text, sanitize.SendMaxBytes)
	switch rep.Status {
	case wire.StatusAnswered:
		return rep, nil
	case wire.StatusTimedOut:
		return wire.AskReply{}, fmt.Errorf("no answer from the user within %s; denied by default: do not go ahead, and ask again later if it still matters", timeout)
	case wire.StatusWithdrawn:
		why, _ := sanitize.Line(rep.Reason, 200)
		return wire.AskReply{}, fmt.Errorf("the question was withdrawn (%s); treat it as no", why)
	}
	return wire.AskReply{}, fmt.Errorf("the agent gave no decision (%q); treat it as no", rep.Status)
}

// inConversation runs do in the session's conversation. When the agent
// no longer knows it (it restarted, and keeps its conversations in
// memory), a new one is opened and do runs once more.
func (s *Server) inConversation(ctx context.Context, req *mcp.CallToolRequest, do func(conv string) error) error {
	for try := 0; ; try++ {
		conv, err := s.conversation(ctx, req)
		if err != nil {
			return err
		}
		err = do(conv)
		var rf *refusal
		if try == 0 && conv != "" && errors.As(err, &rf) && rf.code == wire.CodeUnknownTarget {
			s.forget(req, conv)
			continue
		}
		return err
	}
}

// explain is the tool error for a failure to reach or use the agent.
func (s *Server) explain(err error) error {
	var rf *refusal
	var un *unreachable
	switch {
	case errors.As(err, &rf) && rf.code == wire.CodeClosed:
		return errors.New("the user closed this session's conversation on their device; nothing can be asked or shown there until they reopen it: treat this as no")
	case errors.As(err, &rf):
		return fmt.Errorf("the durable agent refused: %s", rf.message)
	case errors.As(err, &un):
		return fmt.Errorf("collie mcp cannot reach its durable agent at %s (%v); no question was asked: treat this as no, and tell the user to check the agent (collie doctor)", s.cfg.Where, un.err)
	}
	return err
}

// orNoAnswer is err, or an error for an answer that does not fit.
func orNoAnswer(err error) error {
	if err != nil {
		return err
	}
	return errors.New("the agent's answer does not fit the question; treat it as no")
}

// cleanLabel is an option's or a field's label as the card shows it.
func cleanLabel(what, s string) (string, error) {
	label, _ := sanitize.Line(s, sanitize.LabelBytes)
	if strings.TrimSpace(label) == "" {
		return "", fmt.Errorf("an %s is empty; give every one some text", what)
	}
	return label, nil
}

// progress sends the client a progress notification every few seconds
// while a question waits, when the call carries a progress token. stop
// returns once no more will be sent.
func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest, timeout time.Duration) (stop func()) {
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		start := time.Now()
		t := time.NewTicker(s.cfg.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				waited := time.Since(start).Round(time.Second)
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: tok, Progress: time.Since(start).Seconds(), Total: timeout.Seconds(),
					Message: fmt.Sprintf("waiting for the user's answer on a paired device (%s of %s)", waited, timeout),
				})
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// argCap bounds the arguments of an ask tool or notify; approveCap those
// of approve, whose input may carry a whole file (as the hook's).
const (
	argCap     = 256 << 10
	approveCap = 8 << 20
)

// capArguments refuses a tool call whose arguments are over their cap
// before they are decoded: a tool error (approve: a deny), never a crash.
func capArguments(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ct, ok := req.(*mcp.CallToolRequest); ok && ct.Params != nil {
			n := len(ct.Params.Arguments)
			switch {
			case ct.Params.Name == approveTool && n > approveCap:
				return denied(fmt.Sprintf("the tool call is %d bytes, over the %d bytes Collie shows on a phone; denied", n, approveCap)), nil
			case ct.Params.Name != approveTool && n > argCap:
				res := &mcp.CallToolResult{}
				res.SetError(fmt.Errorf("the arguments are %d bytes; the limit is %d: ask a shorter question", n, argCap))
				return res, nil
			}
		}
		return next(ctx, method, req)
	}
}

// schema is a JSON schema, as the tools list shows it.
type (
	schema = jsonschema.Schema
	props  = map[string]*schema
)

func obj(p props, required ...string) *schema {
	return &schema{Type: "object", Properties: p, Required: required, AdditionalProperties: &schema{Not: &schema{}}}
}

func str(desc string, minLen, maxLen int) *schema {
	s := &schema{Type: "string", Description: desc}
	if minLen > 0 {
		s.MinLength = ptr(minLen)
	}
	if maxLen > 0 {
		s.MaxLength = ptr(maxLen)
	}
	return s
}

func ptr[T any](v T) *T { return &v }
