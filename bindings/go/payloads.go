package omprpc

import "encoding/json"

// TextDelta is the text an assistant message event adds to the answer: the delta of a
// text_delta, and false for every other event (a thinking_delta's reasoning and a
// toolcall_delta's argument JSON are not answer text).
func (h AssistantMessageEventValue) TextDelta() (string, bool) {
	if d, ok := h.Value.(*AssistantTextDeltaEvent); ok {
		return d.Delta, true
	}
	return "", false
}

// agentMessage decodes a message of a turn by its role. A message that does not fit its
// role's type (an agent's shape the table does not know) is kept as an *UnknownAgentMessage:
// a turn is never lost to one message's shape.
func agentMessage(raw json.RawMessage) AgentMessageValue {
	var m AgentMessageValue
	if err := json.Unmarshal(raw, &m); err != nil {
		var head struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(raw, &head)
		m.Value = &UnknownAgentMessage{RoleValue: head.Role, Raw: raw}
	}
	return m
}
