package fakemodel

import "fmt"

// The OpenAI Responses API as Codex reads it: response.created, one
// output item (response.output_item.added, its deltas,
// response.output_item.done) and response.completed with the output and
// usage.

func openaiItem(r Request, t Turn) map[string]any {
	if t.Call != nil {
		return map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_fake%d", r.Seq),
			"call_id": t.Call.ID, "name": t.Call.Name, "arguments": inputJSON(t.Call), "status": "completed"}
	}
	return map[string]any{"type": "message", "id": fmt.Sprintf("msg_fake%d", r.Seq), "role": "assistant",
		"status": "completed", "content": []any{map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}}}
}

func openaiResponse(r Request, t Turn) map[string]any {
	return map[string]any{
		"id": fmt.Sprintf("resp_fake%d", r.Seq), "object": "response", "status": "completed",
		"model": r.Model, "output": []any{openaiItem(r, t)},
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
			"input_tokens_details":  map[string]any{"cached_tokens": 0},
			"output_tokens_details": map[string]any{"reasoning_tokens": 0}},
	}
}

func openaiStream(w responseWriter, r Request, t Turn) {
	e := newSSE(w)
	resp := openaiResponse(r, t)
	created := map[string]any{"id": resp["id"], "object": "response", "status": "in_progress",
		"model": r.Model, "output": []any{}}
	e.event("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": created})
	item := openaiItem(r, t)
	added := map[string]any{}
	for k, v := range item {
		added[k] = v
	}
	added["status"] = "in_progress"
	if t.Call != nil {
		added["arguments"] = ""
	} else {
		added["content"] = []any{}
	}
	e.event("response.output_item.added", map[string]any{"type": "response.output_item.added",
		"sequence_number": 1, "output_index": 0, "item": added})
	if t.Call != nil {
		e.event("response.function_call_arguments.delta", map[string]any{"type": "response.function_call_arguments.delta",
			"sequence_number": 2, "output_index": 0, "item_id": item["id"], "delta": item["arguments"]})
		e.event("response.function_call_arguments.done", map[string]any{"type": "response.function_call_arguments.done",
			"sequence_number": 3, "output_index": 0, "item_id": item["id"], "arguments": item["arguments"]})
	} else {
		e.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta",
			"sequence_number": 2, "output_index": 0, "content_index": 0, "item_id": item["id"], "delta": t.Text})
		e.event("response.output_text.done", map[string]any{"type": "response.output_text.done",
			"sequence_number": 3, "output_index": 0, "content_index": 0, "item_id": item["id"], "text": t.Text})
	}
	e.event("response.output_item.done", map[string]any{"type": "response.output_item.done",
		"sequence_number": 4, "output_index": 0, "item": item})
	e.event("response.completed", map[string]any{"type": "response.completed", "sequence_number": 5, "response": resp})
}
