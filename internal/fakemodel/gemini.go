package fakemodel

import "strings"

// The Gemini API: a GenerateContentResponse, or for
// :streamGenerateContent?alt=sse a stream of them as "data:" lines.

func geminiModel(path string) string {
	_, m, _ := strings.Cut(path, "/models/")
	m, _, _ = strings.Cut(m, ":")
	return m
}

func geminiResponse(t Turn) map[string]any {
	var part map[string]any
	if t.Call != nil {
		in := t.Call.Input
		if in == nil {
			in = map[string]any{}
		}
		part = map[string]any{"functionCall": map[string]any{"name": t.Call.Name, "args": in, "id": t.Call.ID}}
	} else {
		part = map[string]any{"text": t.Text}
	}
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "fake",
	}
}

func geminiStream(w responseWriter, t Turn) {
	newSSE(w).event("", geminiResponse(t))
}
