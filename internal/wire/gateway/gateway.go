// Package gateway is the vocabulary of the model gateway that config,
// actors/brama and the being share
// (docs/brama.md#other-openai-compatible-gateways): the authentication
// modes of BRAMA_AUTH, the max-tokens fields of BRAMA_MAX_TOKENS_FIELD,
// Brama's model selectors (docs/brama.md#model-selection), and the mark
// of a completion refused because its model is not served
// (ErrModelNotServed). It is pure: no I/O, no state, and its refusals are
// plain errors whose text is the sentence of
// docs/configuration.md#validation-sentences; the caller classifies them.
package gateway

import (
	"errors"
	"strings"
)

// Auth is how the client authenticates with the gateway.
type Auth string

// The authentication modes of BRAMA_AUTH.
const (
	// AuthHMAC signs every completion for Brama
	// (docs/brama.md#the-completion-request) and keeps Brama's strict
	// validation. The zero value means AuthHMAC.
	AuthHMAC Auth = "hmac"
	// AuthBearer sends BRAMA_API_KEY_FILE's key as Authorization: Bearer
	// on every request (OpenAI, OpenRouter, a vLLM with --api-key, …).
	AuthBearer Auth = "bearer"
	// AuthNone sends no credentials (a local llama.cpp, vLLM or Ollama).
	AuthNone Auth = "none"
)

// The refusals of BRAMA_AUTH and BRAMA_MODEL.
var (
	ErrAuth          = errors.New("BRAMA_AUTH must be hmac, bearer or none")
	ErrSelectorModel = errors.New("BRAMA_MODEL must name a model when BRAMA_AUTH is not hmac")
)

// ErrModelNotServed marks a completion the gateway refused with HTTP 404
// for a reason other than the credentials: the model asked for is not
// served (docs/brama.md#unserved-models). The being tries another model
// on it; the error's kind and sentence stay those of its status.
var ErrModelNotServed = errors.New("model not served")

// ParseAuth reads BRAMA_AUTH; the empty string is AuthHMAC. Any other
// value is refused with ErrAuth.
func ParseAuth(s string) (Auth, error) {
	switch a := Auth(s); a {
	case "":
		return AuthHMAC, nil
	case AuthHMAC, AuthBearer, AuthNone:
		return a, nil
	}
	return "", ErrAuth
}

// Brama reports whether a is Brama's own HMAC mode (or the zero value),
// the only one in which selectors mean something and validation is strict.
func (a Auth) Brama() bool { return a == AuthHMAC || a == "" }

// CheckModel refuses with ErrSelectorModel a selector as the model of any
// gateway but Brama, which alone knows selectors.
func (a Auth) CheckModel(model string) error {
	if !a.Brama() && IsSelector(model) {
		return ErrSelectorModel
	}
	return nil
}

// IsSelector reports whether model names a choice Brama makes rather than
// an exact model id: "any", "any-vision-capable", "best", or a "task:"
// prefix. Brama accepts a selector without consulting /v1/models.
func IsSelector(model string) bool {
	switch model {
	case "any", "any-vision-capable", "best":
		return true
	}
	return strings.HasPrefix(model, "task:")
}

// MaxTokensField names the request field that carries the completion's
// token limit.
type MaxTokensField string

// The max-tokens fields of BRAMA_MAX_TOKENS_FIELD.
const (
	// FieldMaxTokens is "max_tokens", the classic field. The zero value
	// means FieldMaxTokens.
	FieldMaxTokens MaxTokensField = "max_tokens"
	// FieldMaxCompletionTokens is "max_completion_tokens", which newer
	// OpenAI models require.
	FieldMaxCompletionTokens MaxTokensField = "max_completion_tokens"
)

// ErrMaxTokensField is the refusal of BRAMA_MAX_TOKENS_FIELD.
var ErrMaxTokensField = errors.New("BRAMA_MAX_TOKENS_FIELD must be max_tokens or max_completion_tokens")

// ParseMaxTokensField reads BRAMA_MAX_TOKENS_FIELD; the empty string is
// FieldMaxTokens. Any other value is refused with ErrMaxTokensField.
func ParseMaxTokensField(s string) (MaxTokensField, error) {
	switch f := MaxTokensField(s); f {
	case "":
		return FieldMaxTokens, nil
	case FieldMaxTokens, FieldMaxCompletionTokens:
		return f, nil
	}
	return "", ErrMaxTokensField
}
