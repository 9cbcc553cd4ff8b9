package fakemodel

import (
	"encoding/json"
	"strings"
)

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

// geminiSchemaReply returns, for a side request that asks for JSON of a
// schema (Gemini CLI's model router does), a JSON text that fits the
// schema's shape, and whether the request asked for one: without it
// Gemini CLI retries the request for a minute and a half.
func geminiSchemaReply(body []byte) (string, bool) {
	var b struct {
		GenerationConfig struct {
			ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
			ResponseSchema     map[string]any `json:"responseSchema"`
		} `json:"generationConfig"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", false
	}
	schema := b.GenerationConfig.ResponseJSONSchema
	if schema == nil {
		schema = b.GenerationConfig.ResponseSchema
	}
	if schema == nil {
		return "", false
	}
	out, err := json.Marshal(fillSchema(schema, 0))
	if err != nil {
		return "", false
	}
	return string(out), true
}

// fillSchema makes a value of the schema's type: objects with every
// property, the first enum value, 1 for numbers, "fake" for strings.
func fillSchema(schema map[string]any, depth int) any {
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	typ, _ := schema["type"].(string)
	switch strings.ToLower(typ) {
	case "object":
		obj := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for name, p := range props {
			if ps, ok := p.(map[string]any); ok && depth < 8 {
				obj[name] = fillSchema(ps, depth+1)
			}
		}
		return obj
	case "array":
		if items, ok := schema["items"].(map[string]any); ok && depth < 8 {
			return []any{fillSchema(items, depth+1)}
		}
		return []any{}
	case "integer", "number":
		return 1
	case "boolean":
		return false
	}
	return "fake"
}
