package brama

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

func TestSignatureKnownVector(t *testing.T) {
	// Computed independently (Python hmac/hashlib).
	body := []byte(`{"model":"m"}`)
	digest := bodyDigest(body)
	require.Equal(t, "548f58d1c36c715b44f0863472074a97c448d5b8d18164b92adf55592b127f86", digest)
	require.Equal(t, "fa9d8b2b8918fa1c2ad508ffb6e38742c2906122a28ccd67c92148b0001d9aa3",
		signature([]byte("top-secret"), "agent-1", 1700000000, digest))
}

func TestCompleteSignsTheBytesItSends(t *testing.T) {
	srv := newServer(t)
	// The one clock stands still but for the exchange, which takes 1.5 s
	// of it: the signed timestamp is taken before, Elapsed measured on it.
	var now atomic.Int64
	now.Store(time.Unix(1700000123, 0).UnixNano())
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		now.Add(int64(1500 * time.Millisecond))
		return bramatest.TextReply("hello", bramatest.Usage(12, 3))
	})
	c := newClient(t, srv.URL, func(cfg *ClientConfig) {
		cfg.Clock = testkit.ReadClock(func() time.Time { return time.Unix(0, now.Load()) })
	})

	got, err := c.Complete(testContext(t), sampleParams())
	require.NoError(t, err)
	require.Equal(t, chat.Message{Role: chat.RoleAssistant, Content: "hello"}, got.Message)
	require.Equal(t, FinishStop, got.FinishReason)
	require.Equal(t, bramatest.Usage(12, 3), got.Usage)
	require.False(t, got.Truncated)
	require.Equal(t, 1500*time.Millisecond, got.Elapsed, "measured on the injected clock")

	reqs := srv.Completions()
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.Equal(t, "agent-1", r.Header.Get("X-Agent-Id"))
	require.Equal(t, "1700000123", r.Header.Get("X-Agent-Timestamp"))
	sum := sha256.Sum256(r.Body)
	require.Equal(t, hex.EncodeToString(sum[:]), r.Header.Get("X-Agent-Body-Sha256"))
	mac := hmac.New(sha256.New, []byte(testSecret))
	mac.Write([]byte("agent-1:1700000123:" + hex.EncodeToString(sum[:])))
	require.Equal(t, hex.EncodeToString(mac.Sum(nil)), r.Header.Get("X-Agent-Signature"))

	// The body: the five fields of docs/brama.md#the-completion-request in
	// order, temperature as configured text.
	require.Equal(t, `{"model":"test-model","messages":[{"role":"system","content":"You are Ada."},{"role":"user","content":"hi"}],`+
		`"max_tokens":2048,"temperature":0.2,"tools":[{"type":"function","function":{"name":"echo","description":"Echo text back.","parameters":{"type":"object"}}}]}`,
		string(r.Body))
	require.Equal(t, "0.2", r.Completion.Temperature.String())
	require.NotContains(t, string(r.Body), testSecret)
	for _, v := range r.Header {
		require.NotContains(t, strings.Join(v, ","), testSecret)
	}
}

func TestWrongSecretIsPermanent(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, srv.URL, func(cfg *ClientConfig) { cfg.Secret = identity.NewSecret([]byte("not-the-secret")) })
	_, err := c.Complete(testContext(t), sampleParams())
	requireBramaError(t, err, fault.Permanent, "brama: HTTP 401: invalid signature")
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	require.False(t, reqs[0].Verified)
}

// tamper is a RoundTripper that changes a request after the client has
// signed it, then sends it on.
type tamper struct {
	next   http.RoundTripper
	mutate func(r *http.Request, body []byte) []byte
}

func (tp tamper) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	body = tp.mutate(r, body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return tp.next.RoundTrip(r)
}

func TestTamperedRequestIsRejected(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(r *http.Request, body []byte) []byte
	}{
		{"body changed after signing", func(_ *http.Request, body []byte) []byte {
			return bytes.Replace(body, []byte(`"hi"`), []byte(`"ho"`), 1)
		}},
		{"body and its hash header changed", func(r *http.Request, body []byte) []byte {
			body = bytes.Replace(body, []byte(`"hi"`), []byte(`"pay me"`), 1)
			r.Header.Set("X-Agent-Body-Sha256", bodyDigest(body))
			return body
		}},
		{"agent id changed", func(r *http.Request, body []byte) []byte {
			r.Header.Set("X-Agent-Id", "agent-2")
			return body
		}},
		{"timestamp changed", func(r *http.Request, body []byte) []byte {
			ts, _ := strconv.ParseInt(r.Header.Get("X-Agent-Timestamp"), 10, 64)
			r.Header.Set("X-Agent-Timestamp", strconv.FormatInt(ts+1, 10))
			return body
		}},
		{"signature missing", func(r *http.Request, body []byte) []byte {
			r.Header.Del("X-Agent-Signature")
			return body
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t)
			srv.Enqueue(bramatest.TextReply("must not be reached", bramatest.Usage(1, 1)))
			transport := http.DefaultTransport.(*http.Transport).Clone()
			t.Cleanup(transport.CloseIdleConnections)
			c := newClient(t, srv.URL, func(cfg *ClientConfig) { cfg.Transport = tamper{next: transport, mutate: tt.mutate} })
			_, err := c.Complete(testContext(t), sampleParams())
			requireBramaError(t, err, fault.Permanent, "brama: HTTP 401: invalid signature")
			require.Empty(t, srv.Completions())
		})
	}
}

func TestBaseURLKeepsPathPrefix(t *testing.T) {
	srv := newServer(t, func(cfg *bramatest.Config) { cfg.Prefix = "/gateway/brama"; cfg.Models = []string{"m-1", "m-2"} })
	for _, base := range []string{srv.URL, srv.URL + "/"} {
		t.Run(base, func(t *testing.T) {
			srv.Enqueue(bramatest.TextReply("ok", bramatest.Usage(1, 1)))
			c := newClient(t, base)
			ctx := testContext(t)
			require.NoError(t, c.Health(ctx))
			ids, err := c.Models(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{"m-1", "m-2"}, ids)
			_, err = c.Complete(ctx, sampleParams())
			require.NoError(t, err)
		})
	}
	for _, r := range srv.Requests() {
		require.Contains(t, []string{"/health", "/v1/models", "/v1/chat/completions"}, r.Path)
	}
}

func TestNewClientRefusesBadBaseURL(t *testing.T) {
	for _, base := range []string{"ftp://host", "host:80", "http://", "::"} {
		_, err := NewClient(ClientConfig{BaseURL: base})
		require.Error(t, err, base)
		require.Equal(t, fault.ClassConfiguration, fault.ClassOf(err), base)
	}
}

func TestHTTPStatusErrors(t *testing.T) {
	long := strings.Repeat("x", 1000)
	wide := strings.Repeat("ż", 900)
	tests := []struct {
		name  string
		reply bramatest.Reply
		kind  fault.Kind
		text  string
	}{
		{"400 with error message", bramatest.ErrorReply(400, "unknown model"), fault.Permanent, "brama: HTTP 400: unknown model"},
		{"401", bramatest.ErrorReply(401, "expired"), fault.Permanent, "brama: HTTP 401: expired"},
		{"404 plain body", bramatest.Reply{Status: 404, Body: []byte("no such route")}, fault.Permanent, "brama: HTTP 404: no such route"},
		{"429", bramatest.ErrorReply(429, "slow down"), fault.Transient, "brama: HTTP 429: slow down"},
		{"500 long body cut at 800 characters", bramatest.Reply{Status: 500, Body: []byte(long)}, fault.Transient, "brama: HTTP 500: " + long[:800]},
		{"502 multibyte body cut at 800 characters", bramatest.Reply{Status: 502, Body: []byte(wide)}, fault.Transient, "brama: HTTP 502: " + strings.Repeat("ż", 800)},
		{"503", bramatest.ErrorReply(503, "overloaded"), fault.Transient, "brama: HTTP 503: overloaded"},
		{"error without message uses the body", bramatest.Reply{Status: 400, Body: []byte(`{"error":"bad"}`)}, fault.Permanent, `brama: HTTP 400: {"error":"bad"}`},
		{"redirect is not followed", bramatest.Reply{Status: 307, Body: []byte("moved")}, fault.Permanent, "brama: HTTP 307: moved"},
	}
	srv := newServer(t)
	c := newClient(t, srv.URL)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.Enqueue(tt.reply)
			_, err := c.Complete(testContext(t), sampleParams())
			requireBramaError(t, err, tt.kind, tt.text)
		})
	}
}

func TestConnectionRefusedIsTransient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := newClient(t, "http://"+addr)
	_, err = c.Complete(testContext(t), sampleParams())
	requireBramaKind(t, err, fault.Transient)
	require.True(t, hasPrefix(err.Error(), "brama: request not sent: "), err.Error())
	require.Contains(t, err.Error(), "connection refused")

	require.Error(t, c.Health(testContext(t)))
	_, err = c.Models(testContext(t))
	requireBramaKind(t, err, fault.Transient)
}

func TestConnectionDroppedMidResponseIsIndeterminate(t *testing.T) {
	srv := newServer(t)
	reply := bramatest.TextReply("a reply that will be cut", bramatest.Usage(5, 5))
	reply.DropMidResponse = true
	srv.Enqueue(reply)
	c := newClient(t, srv.URL)
	_, err := c.Complete(testContext(t), sampleParams())
	requireBramaError(t, err, fault.Indeterminate, "brama: no complete response: unexpected EOF")
	require.Len(t, srv.Completions(), 1, "the request was delivered")
}

func TestTimeoutAfterSendingIsIndeterminate(t *testing.T) {
	srv := newServer(t)
	srv.Enqueue(bramatest.Reply{Stall: true})
	c := newClient(t, srv.URL, func(cfg *ClientConfig) { cfg.Timeout = 200 * time.Millisecond })
	got, err := c.Complete(testContext(t), sampleParams())
	requireBramaKind(t, err, fault.Indeterminate)
	require.Equal(t, "brama: no complete response: timed out after 200ms", err.Error())
	require.GreaterOrEqual(t, got.Elapsed, 200*time.Millisecond)
	require.Len(t, srv.Completions(), 1)
}

func TestHealth(t *testing.T) {
	srv := newServer(t)
	require.NoError(t, newClient(t, srv.URL).Health(testContext(t)))

	sick := newServer(t, func(cfg *bramatest.Config) { cfg.HealthStatus = "degraded" })
	err := newClient(t, sick.URL).Health(testContext(t))
	requireBramaError(t, err, fault.Transient, `brama: health status is "degraded", not "ok"`)
}

func TestModelsAndAvailability(t *testing.T) {
	srv := newServer(t, func(cfg *bramatest.Config) { cfg.Models = []string{"gpt-x", "claude-y"} })
	c := newClient(t, srv.URL)
	ctx := testContext(t)
	ids, err := c.Models(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"gpt-x", "claude-y"}, ids)

	tests := []struct {
		model string
		want  bool
	}{
		{"gpt-x", true},
		{"claude-y", true},
		{"gpt", false},
		{"GPT-X", false},
		{"any", true},
		{"best", true},
		{"task:summarize", true},
	}
	for _, tt := range tests {
		ok, err := c.Available(ctx, tt.model)
		require.NoError(t, err)
		require.Equal(t, tt.want, ok, tt.model)
	}
	srv.SetModels("gpt-z")
	ok, err := c.Available(ctx, "gpt-x")
	require.NoError(t, err)
	require.False(t, ok, "availability follows what Brama lists now")
}

// TestEchoedCredentialIsRedactedInEveryForm: a gateway that echoes the
// credential it refused, as is or JSON-escaped, has it redacted from the
// error sentence, before and after the message is decoded.
func TestEchoedCredentialIsRedactedInEveryForm(t *testing.T) {
	const secret = `sk/a&b<c>"d\e`
	tests := []struct {
		name, body, want string
	}{
		{"message as is", `{"error":{"message":"bad key sk/a&b<c>\"d\\e"}}`, "bad key [redacted]"},
		{"escaped slash", `{"error":{"message":"bad key sk\/a&b<c>\"d\\e"}}`, "bad key [redacted]"},
		{"html escapes", `{"error":{"message":"bad key sk/a\u0026b\u003cc\u003e\"d\\e"}}`, "bad key [redacted]"},
		{"odd escapes", `{"error":{"message":"bad key \u0073k\/a\u0026b<c>\u0022d\u005Ce"}}`, "bad key [redacted]"},
		{"not JSON", `bad key sk\/a\u0026b\u003cc\u003e\"d\\e`, "bad key [redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(cfg *bramatest.Config) { cfg.Secret = []byte(secret) })
			srv.Enqueue(bramatest.Reply{Status: http.StatusBadRequest, Body: []byte(tt.body)})
			c := newClient(t, srv.URL, func(cfg *ClientConfig) { cfg.Secret = identity.NewSecret([]byte(secret)) })
			_, err := c.Complete(testContext(t), sampleParams())
			requireBramaError(t, err, fault.Permanent, "brama: HTTP 400: "+tt.want)
		})
	}
}
