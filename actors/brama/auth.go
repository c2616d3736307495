package brama

import (
	"net/http"
	"strconv"

	"github.com/wisent/singularity/supervision/fault"
)

// Auth is how the client authenticates with the gateway
// (docs/brama.md#other-openai-compatible-gateways).
type Auth string

// The authentication modes of BRAMA_AUTH.
const (
	// AuthHMAC signs every completion for Brama (docs/brama.md#the-completion-request)
	// and keeps Brama's strict validation. The zero value means AuthHMAC.
	AuthHMAC Auth = "hmac"
	// AuthBearer sends BRAMA_API_KEY_FILE's key as Authorization: Bearer
	// on every request (OpenAI, OpenRouter, a vLLM with --api-key, …).
	AuthBearer Auth = "bearer"
	// AuthNone sends no credentials (a local llama.cpp, vLLM or Ollama).
	AuthNone Auth = "none"
)

// ParseAuth reads BRAMA_AUTH.
func ParseAuth(s string) (Auth, error) {
	switch a := Auth(s); a {
	case AuthHMAC, AuthBearer, AuthNone:
		return a, nil
	}
	return "", fault.New(fault.ClassConfiguration, "BRAMA_AUTH must be hmac, bearer or none")
}

// Brama reports whether a is Brama's own HMAC mode, the only one in which
// selectors mean something and validation is strict.
func (a Auth) Brama() bool { return a == AuthHMAC || a == "" }

// The max-tokens fields of BRAMA_MAX_TOKENS_FIELD.
const (
	FieldMaxTokens           = "max_tokens"
	FieldMaxCompletionTokens = "max_completion_tokens"
)

// authorize sets the credentials of one request: the HMAC headers of
// docs/brama.md#the-completion-request for a signed completion, the bearer
// key for every request in bearer mode, nothing otherwise. The secret is
// revealed only for the moment it is used.
func (c *Client) authorize(h http.Header, agentID string, body []byte, signed bool) {
	switch {
	case c.auth == AuthBearer:
		key := c.apiKey.Reveal()
		h["Authorization"] = []string{"Bearer " + string(key)}
		clear(key)
	case c.auth.Brama() && signed:
		digest := bodyDigest(body)
		unix := c.now().Unix()
		key := c.secret.Reveal()
		sig := signature(key, agentID, unix, digest)
		clear(key)
		h[headerAgentID] = []string{agentID}
		h[headerTimestamp] = []string{strconv.FormatInt(unix, 10)}
		h[headerBodySHA256] = []string{digest}
		h[headerSignature] = []string{sig}
	}
}
