package fakemodel

import (
	"encoding/json"
	"strings"
)

// ToolResult is a tool's result as a client sent it back to the model.
type ToolResult struct {
	ID      string // the call's id (Gemini: the id if the client echoed one, else the tool's name)
	Content string // its text; Gemini's response object as JSON
	IsError bool   // marked as an error (Anthropic's is_error)
}

// ToolResults returns the tool results the request carries, in order:
// Anthropic tool_result blocks, OpenAI function_call_output items, Gemini
// functionResponse parts.
func (r Request) ToolResults() []ToolResult {
	switch r.Dialect {
	case Anthropic:
		return anthropicResults(r.Body)
	case OpenAI:
		return openaiResults(r.Body)
	case Gemini:
		return geminiResults(r.Body)
	}
	return nil
}

// ToolResult returns the result for the call id, and whether there is one.
func (r Request) ToolResult(id string) (ToolResult, bool) {
	for _, tr := range r.ToolResults() {
		if tr.ID == id {
			return tr, true
		}
	}
	return ToolResult{}, false
}

// text reads content that is a string or a list of {"type":"text","text"}
// blocks (Anthropic's and OpenAI's forms).
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			parts = append(parts, b.Text)
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

func anthropicResults(body []byte) []ToolResult {
	var b struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &b) != nil {
		return nil
	}
	var out []ToolResult
	for _, m := range b.Messages {
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, bl := range blocks {
			if bl.Type == "tool_result" {
				out = append(out, ToolResult{ID: bl.ToolUseID, Content: text(bl.Content), IsError: bl.IsError})
			}
		}
	}
	return out
}

func openaiResults(body []byte) []ToolResult {
	var b struct {
		Input []struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	if json.Unmarshal(body, &b) != nil {
		return nil
	}
	var out []ToolResult
	for _, it := range b.Input {
		if strings.HasSuffix(it.Type, "_call_output") {
			out = append(out, ToolResult{ID: it.CallID, Content: text(it.Output)})
		}
	}
	return out
}

func geminiResults(body []byte) []ToolResult {
	var b struct {
		Contents []struct {
			Parts []struct {
				FunctionResponse *struct {
					ID       string          `json:"id"`
					Name     string          `json:"name"`
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if json.Unmarshal(body, &b) != nil {
		return nil
	}
	var out []ToolResult
	for _, c := range b.Contents {
		for _, p := range c.Parts {
			if fr := p.FunctionResponse; fr != nil {
				id := fr.ID
				if id == "" {
					id = fr.Name
				}
				out = append(out, ToolResult{ID: id, Content: string(fr.Response)})
			}
		}
	}
	return out
}
