// Package outcome is the result of one tool call as the being records it and
// the model sees it (docs/tools.md#outcomes-and-the-tool-message): a status,
// a content value, an optional error code and the Most ids the call produced.
package outcome

import "encoding/json"

// Statuses of a tool outcome.
const (
	Success       = "success"
	Failed        = "failed"
	Indeterminate = "indeterminate"
)

// SensitiveOutputRejected is the error code of a result the output
// boundary replaced (docs/tools.md#the-output-boundary).
const SensitiveOutputRejected = "sensitive_output_rejected"

// RejectedEnvelope is the whole tool message content of a failed call
// whose result the output boundary rejected: nothing of the original
// result survives. A call of another status keeps it (Rejection).
const RejectedEnvelope = `{"status":"failed","error_code":"sensitive_output_rejected"}`

// Outcome is one tool call's result. Content is raw JSON (null when absent).
// ErrorCode, ChatID and MessageID are empty when not applicable. Rejected
// marks the output boundary's replacement
// (docs/tools.md#the-output-boundary): its envelope is exactly
// RejectedEnvelope.
type Outcome struct {
	Status    string
	Content   json.RawMessage
	ErrorCode string
	ChatID    string
	MessageID string
	Rejected  bool
}

// Rejection returns the outcome that replaces a result the output
// boundary refused (docs/tools.md#the-output-boundary): the call's real
// status, error code sensitive_output_rejected, no content and no Most
// ids. A call that succeeded still reads success, so the model does not
// repeat an effect that happened.
func Rejection(status string) Outcome {
	if status == "" {
		status = Failed
	}
	return Outcome{Status: status, ErrorCode: SensitiveOutputRejected, Rejected: true}
}

// Succeeded returns a success outcome carrying content.
func Succeeded(content json.RawMessage) Outcome {
	return Outcome{Status: Success, Content: content}
}

// Failure returns a failed outcome with an error code and a message the
// model may read, carried as {"message": msg}.
func Failure(code, msg string) Outcome {
	return Outcome{Status: Failed, ErrorCode: code, Content: messageContent(msg)}
}

// Unknown returns an indeterminate outcome: the remote effect of the call
// is not known and it must not be replayed.
func Unknown(code, msg string) Outcome {
	return Outcome{Status: Indeterminate, ErrorCode: code, Content: messageContent(msg)}
}

func messageContent(msg string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"message": msg})
	return b
}

// envelope is the tool message content of
// docs/tools.md#outcomes-and-the-tool-message; keys are sorted so the text is
// stable.
type envelope struct {
	ChatID    *string         `json:"chat_id"`
	Content   json.RawMessage `json:"content"`
	ErrorCode *string         `json:"error_code"`
	MessageID *string         `json:"message_id"`
	Status    string          `json:"status"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Envelope is the JSON text the model sees for this outcome:
// {"chat_id":…,"content":…,"error_code":…,"message_id":…,"status":…},
// or, for the boundary's replacement,
// {"status":<status>,"error_code":"sensitive_output_rejected"}.
func (o Outcome) Envelope() string {
	if o.Rejected {
		status := o.Status
		if status != Success && status != Indeterminate {
			status = Failed
		}
		return `{"status":"` + status + `","error_code":"` + SensitiveOutputRejected + `"}`
	}
	content := o.Content
	if len(content) == 0 {
		content = json.RawMessage("null")
	}
	b, err := json.Marshal(envelope{
		ChatID:    optional(o.ChatID),
		Content:   content,
		ErrorCode: optional(o.ErrorCode),
		MessageID: optional(o.MessageID),
		Status:    o.Status,
	})
	if err != nil {
		// Content was not valid JSON; show the model a plain failure
		// rather than malformed text.
		return Failure("invalid_output", "tool returned malformed JSON").Envelope()
	}
	return string(b)
}
