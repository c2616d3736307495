// Package most is the client of the Most messaging service
// (docs/tools.md#most-tools): the three Most tools the model may call when a
// Most token is configured, and the health check doctor uses. It speaks HTTP
// with a bearer token and returns tool outcomes; it does no actor messaging
// itself.
package most

import (
	"encoding/json"

	"github.com/wisent/singularity/internal/wire/chat"
)

// Names of the Most tools, in catalogue order.
const (
	Health      = "most_health"
	CreateChat  = "most_create_chat"
	SendMessage = "most_send_message"
)

// Services a message may prefer.
var services = []string{"iMessage", "SMS", "RCS"}

// Definitions returns the three Most tool definitions in the order of
// docs/tools.md#most-tools. The slice is fresh on every call.
func Definitions() []chat.Tool {
	return []chat.Tool{
		chat.NewTool(Health, "Check Most messaging readiness and active backends",
			json.RawMessage(`{"type":"object","properties":{},"required":[],"additionalProperties":false}`)),
		chat.NewTool(CreateChat, "Create a Most chat and send its first text message",
			json.RawMessage(`{"type":"object","properties":{"from":{"type":"string"},"to":{"type":"array","items":{"type":"string"},"minItems":1},"text":{"type":"string"},"preferred_service":{"type":"string","enum":["iMessage","SMS","RCS"]}},"required":["from","to","text"],"additionalProperties":false}`)),
		chat.NewTool(SendMessage, "Send a text message to an existing Most chat",
			json.RawMessage(`{"type":"object","properties":{"chat_id":{"type":"string"},"text":{"type":"string"},"preferred_service":{"type":"string","enum":["iMessage","SMS","RCS"]}},"required":["chat_id","text"],"additionalProperties":false}`)),
	}
}

// Names returns the Most tool names in catalogue order.
func Names() []string { return []string{Health, CreateChat, SendMessage} }
