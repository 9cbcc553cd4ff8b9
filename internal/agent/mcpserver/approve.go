package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

const approveTool = "approve"

// approveIn is what Claude Code sends its --permission-prompt-tool.
type approveIn struct {
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
}

// decision is what Claude Code reads back, as the text of the result.
type decision struct {
	Behavior     string          `json:"behavior"` // "allow" or "deny"
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	Message      string          `json:"message,omitempty"`
}

func (s *Server) addApprove() {
	in := obj(props{
		"tool_name":   str("The tool Claude Code is about to run.", 1, 0),
		"input":       {Type: "object", Description: "The tool's input, as it will run."},
		"tool_use_id": str("Claude Code's id of the tool call; the same call again (same id, same input) gets the first answer.", 0, 0),
	}, "tool_name", "input")
	in.AdditionalProperties = nil // Claude Code's schema, open as the hook's: what else it sends is ignored
	s.mcp.AddTool(&mcp.Tool{
		Name:  approveTool,
		Title: "Approve a tool call on the user's phone",
		Description: "Claude Code's permission prompt (--permission-prompt-tool mcp__collie__approve): shows the tool call on the user's phone and waits for their tap. " +
			"Returns {\"behavior\":\"allow\",\"updatedInput\":<input>} or {\"behavior\":\"deny\",\"message\":...} as JSON text. " +
			"Anything but the user's yes is a deny. Not meant to be called by a model.",
		InputSchema: in,
	}, s.approve)
}

// approve asks about one tool call. Its result is always a decision,
// never a tool error: a failure to ask is a deny with the reason, as the
// hook's. Claude Code runs updatedInput, which is the input exactly as the
// card showed it.
func (s *Server) approve(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in approveIn
	if err := jsonstrict.Unmarshal(req.Params.Arguments, &in, jsonstrict.Open); err != nil {
		return denied("Collie could not read the tool call (" + err.Error() + "); denied by default"), nil
	}
	if strings.TrimSpace(in.ToolName) == "" || len(in.Input) == 0 || in.Input[0] != '{' {
		return denied("Collie needs tool_name and an input object to show the tool call; denied by default"), nil
	}
	r := hook.QuestionFor(hook.PreToolUse{ToolName: in.ToolName, ToolInput: in.Input, ToolUseID: in.ToolUseID, Cwd: s.cfg.Cwd})
	rep, err := s.ask(ctx, req, r, s.cfg.Timeout)
	switch {
	case err != nil:
		return denied("Collie denies the tool call: " + err.Error()), nil
	case len(rep.OptionIDs) == 1 && rep.OptionIDs[0] == wire.Yes:
		return result(decision{Behavior: "allow", UpdatedInput: in.Input}), nil
	}
	msg := "The user denied this tool call on their device"
	if rep.Reason != "" {
		msg += ": " + rep.Reason
	}
	return denied(msg), nil
}

func denied(msg string) *mcp.CallToolResult {
	return result(decision{Behavior: "deny", Message: msg})
}

func result(d decision) *mcp.CallToolResult {
	b, err := json.Marshal(d)
	if err != nil {
		b = fmt.Appendf(nil, `{"behavior":"deny","message":%q}`, "Collie could not encode its decision; denied")
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}
