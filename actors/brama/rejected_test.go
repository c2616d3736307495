package brama

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/bramatest"
)

func TestRejected(t *testing.T) {
	tests := []struct {
		code int
		msg  string
		want bool
	}{
		{400, "This model's maximum context length is 8192 tokens", true},
		{404, "model 'llama3' not found, try pulling it first", true},
		{413, "request entity too large", true},
		{422, "temperature must be below 2", true},
		{422, "echoed [redacted] in a parameter", true},
		{400, "API key not valid. Please pass a valid API key.", false},
		{400, "Invalid api_key", false},
		{400, "missing Authentication header", false},
		{400, "Unauthorized", false},
		{404, "no credentials found", false},
		{401, "expired", false},
		{403, "quota", false},
		{405, "method not allowed", false},
		{409, "conflict", false},
		{429, "slow down", false},
		{500, "boom", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, rejectedRequest(tt.code, tt.msg), "%d %q", tt.code, tt.msg)
	}
}

// TestRejectedCompletionIsTransient: with bearer or none a completion the
// gateway refuses (not its credentials) is transient, so the cycle fails
// and not the being; it is not retried within the round. With Brama, and
// for the read-only requests, the status keeps its kind.
func TestRejectedCompletionIsTransient(t *testing.T) {
	for _, auth := range []gateway.Auth{gateway.AuthBearer, gateway.AuthNone} {
		t.Run(string(auth), func(t *testing.T) {
			srv, c := newGateway(t, auth)
			srv.Enqueue(bramatest.ErrorReply(http.StatusBadRequest, "context length exceeded"))
			p := sampleParams()
			p.Model = "gpt-small"
			_, err := c.Complete(testContext(t), p)
			requireBramaError(t, err, fault.Transient, "brama: HTTP 400: context length exceeded")
			assert.Len(t, srv.Completions(), 1, "not retried")

			srv.Enqueue(bramatest.ErrorReply(http.StatusUnauthorized, "bad key"))
			_, err = c.Complete(testContext(t), p)
			requireBramaError(t, err, fault.Permanent, "brama: HTTP 401: bad key")
		})
	}
	srv := newServer(t)
	c := newClient(t, srv.URL)
	srv.Enqueue(bramatest.ErrorReply(http.StatusBadRequest, "context length exceeded"))
	_, err := c.Complete(testContext(t), sampleParams())
	requireBramaError(t, err, fault.Permanent, "brama: HTTP 400: context length exceeded")
}
