package omprpc

// TextDelta is the text an assistant message event adds to the answer: the delta of a
// text_delta, and false for every other event (a thinking_delta's reasoning and a
// toolcall_delta's argument JSON are not answer text).
func (h AssistantMessageEventValue) TextDelta() (string, bool) {
	if d, ok := h.Value.(*AssistantTextDelta); ok {
		return d.Delta, true
	}
	return "", false
}
