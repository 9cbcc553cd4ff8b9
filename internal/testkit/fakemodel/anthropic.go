package fakemodel

import "fmt"

// The Anthropic Messages API: a message object, or with "stream": true the
// events message_start, content_block_start/delta/stop, message_delta and
// message_stop.

func anthropicUsage() map[string]any {
	return map[string]any{"input_tokens": 10, "output_tokens": 5,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}

func anthropicContent(t Turn) (block map[string]any, stop string) {
	if t.Call != nil {
		return map[string]any{"type": "tool_use", "id": t.Call.ID, "name": t.Call.Name,
			"input": t.Call.Input}, "tool_use"
	}
	return map[string]any{"type": "text", "text": t.Text}, "end_turn"
}

func anthropicMessage(r Request, t Turn) map[string]any {
	block, stop := anthropicContent(t)
	return map[string]any{
		"id": fmt.Sprintf("msg_fake%d", r.Seq), "type": "message", "role": "assistant",
		"model": r.Model, "content": []any{block}, "stop_reason": stop,
		"stop_sequence": nil, "usage": anthropicUsage(),
	}
}

func anthropicStream(w responseWriter, r Request, t Turn) {
	e := newSSE(w)
	e.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_fake%d", r.Seq), "type": "message", "role": "assistant",
		"model": r.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": anthropicUsage(),
	}})
	_, stop := anthropicContent(t)
	if t.Call != nil {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": t.Call.ID, "name": t.Call.Name, "input": map[string]any{}}})
		e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": inputJSON(t.Call)}})
	} else {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": t.Text}})
	}
	e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	e.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
}
