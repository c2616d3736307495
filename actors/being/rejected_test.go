package being_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/brama"
	"github.com/wisent/singularity/actors/family"
	identitypkg "github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

const rejectKey = "sk-being-test-bearer-key"

// bearerGateway starts a provider-like gateway (bearer key, /v1 base) and
// returns a family option that makes the harness's gateway use it.
func bearerGateway(t *testing.T) (*bramatest.Server, func(*family.Options)) {
	t.Helper()
	srv := bramatest.Start(t, bramatest.Config{Auth: "bearer", APIKey: []byte(rejectKey), Models: []string{"test-model"}})
	client, err := brama.NewClient(brama.ClientConfig{BaseURL: srv.URL, Auth: gateway.AuthBearer, APIKey: identitypkg.NewSecret([]byte(rejectKey)), Timeout: waitLimit})
	require.NoError(t, err)
	return srv, func(fo *family.Options) { fo.Gateway.Client = client }
}

// TestRejectedRequestsFailTheCycle: a provider that refuses the
// completion request with 400, 404, 413 and 422 (not about credentials)
// fails those cycles, not the being (docs/brama.md#rejected-requests):
// each refusal is journaled as a warning carrying the gateway's sentence
// with the key redacted, the failing-cycle backoff doubles the wait, a
// rejected request debits nothing, and when the gateway answers again
// the being recovers and pays exactly for what it was served.
func TestRejectedRequestsFailTheCycle(t *testing.T) {
	t.Parallel()
	srv, useBearer := bearerGateway(t)
	refusals := []bramatest.Reply{
		bramatest.ErrorReply(http.StatusBadRequest, "This model's maximum context length is 8192 tokens"),
		bramatest.ErrorReply(http.StatusNotFound, "model 'test-model' not found, try pulling it first"),
		bramatest.ErrorReply(http.StatusRequestEntityTooLarge, "request too large"),
		bramatest.ErrorReply(http.StatusUnprocessableEntity, "temperature: echoed "+rejectKey),
	}
	srv.Enqueue(refusals...)
	srv.Enqueue(bramatest.TextReply("back", bramatest.Usage(1000, 100)))
	clock := testkit.NewStepClock()
	opts := options(t, being.Run)
	opts.Clock = clock
	opts.CycleInterval = 0
	opts.MaxCycles = uint64(len(refusals) + 1) // then idle: the script is done
	opts.Pricing.InputPerMillion = testkit.USD("1")
	opts.Pricing.OutputPerMillion = testkit.USD("2")
	h := start(t, srv, opts, useBearer)

	want := time.Second
	for i := range refusals {
		r := h.reportFor(uint64(i + 1))
		require.Error(t, r.Err, "cycle %d", i+1)
		assert.Equal(t, fault.Transient, fault.KindOf(r.Err), "cycle %d: %v", i+1, r.Err)
		timer := clock.Next(t, waitLimit)
		assert.Equal(t, want, timer.After, "wait after %d rejected cycles", i+1)
		want *= 2
		timer.Fire()
	}
	r := h.reportFor(uint64(len(refusals) + 1))
	require.NoError(t, r.Err, "the being recovered")
	require.NotNil(t, r.FinalContent)
	assert.Equal(t, "back", *r.FinalContent)
	assert.Equal(t, "9.9988", r.Balance.String(), "10 − (1000 × 1 + 100 × 2) / 1e6")
	stopped := h.shutdown()
	assert.Equal(t, state.StatusStopped, stopped.Status, "the being lived on: %v", stopped.Err)
	require.NoError(t, stopped.Err)

	assert.Len(t, srv.Completions(), len(refusals)+1, "a refusal is not retried within its round")
	st := h.state()
	events := h.journal()
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	assert.Equal(t, "9.9988", st.Budget.Remaining.String())
	var debits, warnings []string
	for _, e := range events {
		switch e.Type {
		case state.EventCostDebited:
			debits = append(debits, e.Amount.String())
		case state.EventWarning:
			warnings = append(warnings, e.Message)
		}
	}
	assert.Equal(t, []string{"0.0012"}, debits, "rejected requests debit nothing")
	assert.Equal(t, []string{
		"brama: HTTP 400: This model's maximum context length is 8192 tokens",
		"brama: HTTP 404: model 'test-model' not found, try pulling it first",
		"brama: HTTP 413: request too large",
	}, warnings[:3])
	assert.Len(t, warnings, len(refusals))
	assert.Equal(t, "brama: HTTP 422: temperature: echoed [redacted]", warnings[3])
	for _, w := range warnings {
		assert.NotContains(t, w, rejectKey)
	}
}

// TestCredentialRefusalsStayPermanent: a 401 or 403 from a provider, or a
// 400 about the key, still ends the being (status failed, run exits 3):
// no cycle can fix credentials.
func TestCredentialRefusalsStayPermanent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply bramatest.Reply
	}{
		{"401", bramatest.ErrorReply(http.StatusUnauthorized, "Incorrect API key provided")},
		{"403", bramatest.ErrorReply(http.StatusForbidden, "country not supported")},
		{"400 about the key", bramatest.ErrorReply(http.StatusBadRequest, "API key not valid. Please pass a valid API key.")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, useBearer := bearerGateway(t)
			srv.Enqueue(tt.reply)
			opts := options(t, being.Run)
			opts.CycleInterval = 0
			h := start(t, srv, opts, useBearer)
			stopped := h.stopped()
			assert.Equal(t, state.StatusFailed, stopped.Status)
			require.Error(t, stopped.Err)
			assert.Equal(t, fault.Permanent, fault.KindOf(stopped.Err))
			assert.True(t, strings.HasPrefix(stopped.Err.Error(), "brama: HTTP "+tt.name[:3]+": "), stopped.Err.Error())
			assert.Len(t, srv.Completions(), 1)
		})
	}
}
