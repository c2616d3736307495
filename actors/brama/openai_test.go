package brama

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// testAPIKey is the bearer key both sides share; it must never leak.
const testAPIKey = "sk-test-key-never-printed-42"

// newGateway runs an OpenAI-compatible test server (bearer or none) and a
// client for it configured against its /v1 base.
func newGateway(t *testing.T, auth gateway.Auth, mods ...func(*ClientConfig)) (*bramatest.Server, *Client) {
	t.Helper()
	scfg := bramatest.Config{Auth: string(auth), Models: []string{"gpt-small", "gpt-large"}}
	if auth == gateway.AuthBearer {
		scfg.APIKey = []byte(testAPIKey)
	}
	srv := bramatest.Start(t, scfg)
	c := newClient(t, srv.URL, append([]func(*ClientConfig){func(cfg *ClientConfig) {
		cfg.Auth = auth
		cfg.Secret = identity.Secret{}
		if auth == gateway.AuthBearer {
			cfg.APIKey = identity.NewSecret([]byte(testAPIKey))
		}
	}}, mods...)...)
	return srv, c
}

func TestBearerGateway(t *testing.T) {
	srv, c := newGateway(t, gateway.AuthBearer)
	require.True(t, strings.HasSuffix(srv.URL, "/v1"), srv.URL)
	ctx := testContext(t)

	require.NoError(t, c.Health(ctx), "the model list is the health check")
	ids, err := c.Models(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"gpt-small", "gpt-large"}, ids)
	ok, err := c.Available(ctx, "any")
	require.NoError(t, err)
	require.False(t, ok, "selectors are Brama's")

	srv.Enqueue(bramatest.TextReply("hello", bramatest.Usage(12, 3)))
	p := sampleParams()
	p.Model = "gpt-small"
	got, err := c.Complete(ctx, p)
	require.NoError(t, err)
	require.Equal(t, "hello", got.Message.Content)
	require.Empty(t, got.Warnings)

	reqs := srv.Requests()
	require.Len(t, reqs, 4) // models (health), models, models (available), completion
	for _, r := range reqs {
		require.True(t, r.Verified, r.Path)
		require.Equal(t, []string{"Bearer " + testAPIKey}, r.Header["Authorization"], r.Path)
		for _, h := range []string{"X-Agent-Id", "X-Agent-Timestamp", "X-Agent-Body-Sha256", "X-Agent-Signature"} {
			require.Empty(t, r.Header.Get(h), "no HMAC header %s", h)
		}
		require.NotContains(t, string(r.Body), testAPIKey)
		require.Contains(t, []string{"/v1/models", "/v1/chat/completions"}, r.Path)
	}
}

func TestBearerWrongKeyIsRedacted(t *testing.T) {
	srv, _ := newGateway(t, gateway.AuthBearer)
	// A gateway that echoes the key it refused.
	const wrong = "sk-wrong-key-echoed-back"
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply { return bramatest.TextReply("x", bramatest.Usage(1, 1)) })
	c := newClient(t, srv.URL, func(cfg *ClientConfig) {
		cfg.Auth, cfg.APIKey = gateway.AuthBearer, identity.NewSecret([]byte(wrong))
	})
	_, err := c.Complete(testContext(t), sampleParams())
	requireBramaError(t, err, fault.Permanent, "brama: HTTP 401: invalid api key")

	echo := bramatest.Start(t, bramatest.Config{Auth: "none"})
	echo.Enqueue(bramatest.ErrorReply(401, "Incorrect API key provided: "+wrong))
	c = newClient(t, echo.URL, func(cfg *ClientConfig) { cfg.Auth, cfg.APIKey = gateway.AuthNone, identity.NewSecret([]byte(wrong)) })
	_, err = c.Complete(testContext(t), sampleParams())
	requireBramaError(t, err, fault.Permanent, "brama: HTTP 401: Incorrect API key provided: [redacted]")
}

func TestKeylessGatewaySendsNoCredentials(t *testing.T) {
	srv, c := newGateway(t, gateway.AuthNone)
	ctx := testContext(t)
	require.NoError(t, c.Health(ctx))
	srv.Enqueue(bramatest.TextReply("hi", bramatest.Usage(1, 1)))
	_, err := c.Complete(ctx, sampleParams())
	require.NoError(t, err)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		require.True(t, r.Verified)
		_, present := r.Header["Authorization"]
		require.False(t, present, "no Authorization header on %s", r.Path)
		require.Empty(t, r.Header.Get("X-Agent-Signature"))
	}
}

// TestNoModelList: a gateway whose model list answers 404 has none, a
// permanent failure wrapping ErrNoModelList, which is what doctor lets
// pass; any other failure of the list does not wrap it.
func TestNoModelList(t *testing.T) {
	srv := bramatest.Start(t, bramatest.Config{Auth: "none", NoModelList: true})
	c := newClient(t, srv.URL, func(cfg *ClientConfig) { cfg.Auth, cfg.Secret = gateway.AuthNone, identity.Secret{} })
	for name, call := range map[string]func() error{
		"models": func() error { _, err := c.Models(testContext(t)); return err },
		"health": func() error { return c.Health(testContext(t)) },
	} {
		err := call()
		require.ErrorIs(t, err, ErrNoModelList, name)
		requireBramaKind(t, err, fault.Permanent)
		require.Equal(t, "brama: the gateway has no model list (HTTP 404: not found)", err.Error(), name)
	}

	_, keyed := newGateway(t, gateway.AuthBearer, func(cfg *ClientConfig) { cfg.APIKey = identity.NewSecret([]byte("sk-wrong")) })
	_, err := keyed.Models(testContext(t))
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrNoModelList, "a refused key is no missing list")
}

func TestEndpoints(t *testing.T) {
	tests := []struct{ base, health, models, complete string }{
		{"http://h", "http://h/health", "http://h/v1/models", "http://h/v1/chat/completions"},
		{"http://h/brama/", "http://h/brama/health", "http://h/brama/v1/models", "http://h/brama/v1/chat/completions"},
		{"https://api.example.com/v1", "https://api.example.com/health", "https://api.example.com/v1/models", "https://api.example.com/v1/chat/completions"},
		{"http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/health", "http://127.0.0.1:8080/v1/models", "http://127.0.0.1:8080/v1/chat/completions"},
		{"https://openrouter.ai/api/v1", "https://openrouter.ai/api/health", "https://openrouter.ai/api/v1/models", "https://openrouter.ai/api/v1/chat/completions"},
		{"http://h/v10", "http://h/v10/health", "http://h/v10/v1/models", "http://h/v10/v1/chat/completions"},
	}
	for _, tt := range tests {
		c, err := NewClient(ClientConfig{BaseURL: tt.base})
		require.NoError(t, err)
		require.Equal(t, []string{tt.health, tt.models, tt.complete}, []string{c.healthURL, c.modelsURL, c.completeURL}, tt.base)
	}
}

func TestMaxCompletionTokensField(t *testing.T) {
	srv, c := newGateway(t, gateway.AuthNone, func(cfg *ClientConfig) { cfg.MaxTokensField = gateway.FieldMaxCompletionTokens })
	srv.Enqueue(bramatest.TextReply("hi", bramatest.Usage(1, 1)))
	_, err := c.Complete(testContext(t), sampleParams())
	require.NoError(t, err)
	body := string(srv.Completions()[0].Body)
	require.Contains(t, body, `"max_completion_tokens":2048,"temperature":0.2`)
	require.NotContains(t, body, `"max_tokens"`)
}

func TestLenientQuirksThroughTheGateway(t *testing.T) {
	srv, c := newGateway(t, gateway.AuthBearer)
	echo := bramatest.Call("c1", "echo", `{}`)
	replies := []struct {
		reply bramatest.Reply
		warn  string
	}{
		{bramatest.StopWithToolsReply(bramatest.Usage(10, 5), echo), WarnStopWithTools},
		{bramatest.ContentFilterReply("half", bramatest.Usage(10, 5)), WarnContentFilter},
		{bramatest.UsageMismatchReply("x", 10, 5, 20), WarnUsageMismatch},
		{bramatest.NoUsageReply("x"), WarnNoUsageCharged},
	}
	for _, r := range replies {
		srv.Enqueue(r.reply)
		got, err := c.Complete(testContext(t), sampleParams())
		require.NoError(t, err, r.warn)
		require.Equal(t, []string{r.warn}, got.Warnings)
		if r.warn == WarnNoUsageCharged {
			require.True(t, got.NoUsage)
			require.Equal(t, ReservationUsage(got.RequestBytes, 2048), got.Usage)
		}
	}
}

// TestRetryAfterIsHonoured: a 429 with Retry-After: 1, then success, is
// sent again once, after a wait of exactly one second on the injected
// clock; nothing sleeps.
func TestRetryAfterIsHonoured(t *testing.T) {
	clock := testkit.NewStepClock()
	srv, c := newGateway(t, gateway.AuthBearer, func(cfg *ClientConfig) { cfg.Retries = 2; cfg.Clock = clock })
	srv.Enqueue(bramatest.RetryAfterReply(http.StatusTooManyRequests, "1"), bramatest.TextReply("after the wait", bramatest.Usage(3, 2)))

	type result struct {
		comp Completion
		err  error
	}
	done := make(chan result, 1)
	go func() {
		comp, err := c.Complete(testContext(t), sampleParams())
		done <- result{comp, err}
	}()
	timer := clock.Next(t, testWait)
	require.Equal(t, time.Second, timer.After)
	select {
	case <-done:
		t.Fatal("the retry did not wait for Retry-After")
	default:
	}
	require.Len(t, srv.Completions(), 1, "nothing is sent before the wait is over")
	require.True(t, timer.Fire())

	var r result
	select {
	case r = <-done:
	case <-time.After(testWait):
		t.Fatal("no answer after the wait")
	}
	require.NoError(t, r.err)
	require.Equal(t, "after the wait", r.comp.Message.Content)
	require.Equal(t, 2, r.comp.Attempts)
	reqs := srv.Completions()
	require.Len(t, reqs, 2)
	require.Equal(t, reqs[0].Body, reqs[1].Body, "the same bytes are sent again")
}

func TestRetriesAreBounded(t *testing.T) {
	clock := testkit.NewStepClock()
	srv, c := newGateway(t, gateway.AuthNone, func(cfg *ClientConfig) { cfg.Retries = 2; cfg.Clock = clock })
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		return bramatest.ErrorReply(http.StatusServiceUnavailable, "overloaded")
	})
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(testContext(t), sampleParams())
		done <- err
	}()
	// No Retry-After: capped exponential backoff from one second.
	for _, want := range []time.Duration{time.Second, 2 * time.Second} {
		timer := clock.Next(t, testWait)
		require.Equal(t, want, timer.After)
		timer.Fire()
	}
	select {
	case err := <-done:
		requireBramaError(t, err, fault.Transient, "brama: HTTP 503: overloaded")
	case <-time.After(testWait):
		t.Fatal("no answer")
	}
	require.Len(t, srv.Completions(), 3, "one attempt and two retries")
}

// TestNothingThatMayHaveBeenProcessedIsRetried: a dropped response, a 500
// and a timeout after sending reach the gateway once only, and so does a
// refused request (a 400, transient with bearer: it fails the cycle, and
// the next cycle sends another request).
func TestNothingThatMayHaveBeenProcessedIsRetried(t *testing.T) {
	dropped := bramatest.TextReply("a reply that will be cut", bramatest.Usage(5, 5))
	dropped.DropMidResponse = true
	tests := []struct {
		name  string
		reply bramatest.Reply
		kind  fault.Kind
	}{
		{"dropped response", dropped, fault.Indeterminate},
		{"500", bramatest.ErrorReply(500, "boom"), fault.Transient},
		{"400", bramatest.ErrorReply(400, "bad"), fault.Transient},
		{"timeout", bramatest.Reply{Stall: true}, fault.Indeterminate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := testkit.NewStepClock()
			srv, c := newGateway(t, gateway.AuthBearer, func(cfg *ClientConfig) {
				cfg.Retries, cfg.Clock, cfg.Timeout = 2, clock, 300*time.Millisecond
			})
			srv.Enqueue(tt.reply)
			srv.SetHandler(func(*bramatest.Request) bramatest.Reply { return bramatest.TextReply("second", bramatest.Usage(1, 1)) })
			got, err := c.Complete(testContext(t), sampleParams())
			requireBramaKind(t, err, tt.kind)
			require.Equal(t, 1, got.Attempts)
			require.Len(t, srv.Completions(), 1)
		})
	}
}

func TestRefusedConnectionIsRetried(t *testing.T) {
	clock := testkit.NewStepClock()
	c := newClient(t, "http://"+closedAddr(t), func(cfg *ClientConfig) { cfg.Retries = 1; cfg.Clock = clock })
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(testContext(t), sampleParams())
		done <- err
	}()
	timer := clock.Next(t, testWait)
	require.Equal(t, time.Second, timer.After)
	timer.Fire()
	select {
	case err := <-done:
		requireBramaKind(t, err, fault.Transient)
		require.Contains(t, err.Error(), "connection refused")
	case <-time.After(testWait):
		t.Fatal("no answer")
	}
}

func TestRetryWaitThatOutlastsTheTimeoutIsNotTaken(t *testing.T) {
	srv, c := newGateway(t, gateway.AuthNone, func(cfg *ClientConfig) { cfg.Retries = 2; cfg.Timeout = 2 * time.Second })
	srv.Enqueue(bramatest.RetryAfterReply(http.StatusTooManyRequests, "30"))
	got, err := c.Complete(testContext(t), sampleParams())
	requireBramaError(t, err, fault.Transient, "brama: HTTP 429: slow down")
	require.Equal(t, 1, got.Attempts)
	require.Less(t, got.Elapsed, time.Second, "the client did not wait in vain")
}

func TestRetryDelay(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header string
		n      int
		want   time.Duration
	}{
		{"", 0, time.Second},
		{"", 1, 2 * time.Second},
		{"", 3, 8 * time.Second},
		{"", 10, 60 * time.Second},
		{"1", 0, time.Second},
		{"0", 2, 0},
		{"  7 ", 0, 7 * time.Second},
		{"3600", 0, 60 * time.Second},
		{now.Add(5 * time.Second).Format(http.TimeFormat), 0, 5 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, 0},
		{"soon", 1, 2 * time.Second},
		{"-1", 0, time.Second},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, retryDelay(attempt{status: 429, retryAfter: tt.header}, tt.n, now), "%q %d", tt.header, tt.n)
	}
	retryable := map[attempt]bool{
		{status: 429}: true, {status: 502}: true, {status: 503}: true, {status: 504}: true,
		{status: 500}: false, {status: 400}: false, {status: 401}: false,
		{refused: true}: true, {}: false,
	}
	for a, want := range retryable {
		require.Equal(t, want, a.retryable(), "%+v", a)
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
