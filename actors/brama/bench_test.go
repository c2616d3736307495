package brama

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// benchServer answers every completion at once with the same reply.
func benchServer(b *testing.B) *bramatest.Server {
	reply := bramatest.TextReply("ok", bramatest.Usage(100, 10))
	body, err := json.Marshal(reply.JSON)
	if err != nil {
		b.Fatal(err)
	}
	raw := bramatest.Reply{Body: body}
	return newServer(b, func(cfg *bramatest.Config) {
		cfg.DiscardRequests = true
		cfg.Handler = func(*bramatest.Request) bramatest.Reply { return raw }
	})
}

// BenchmarkClientComplete is one signed, validated completion through the
// bare client against a zero-latency local server: the baseline.
func BenchmarkClientComplete(b *testing.B) {
	srv := benchServer(b)
	c := newClient(b, srv.URL)
	ctx := testContext(b)
	p := sampleParams()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Complete(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGatewayComplete is the same completion asked of the gateway
// actor: the difference from BenchmarkClientComplete is the gateway's own
// overhead (mailbox, worker goroutine, answer by message).
func BenchmarkGatewayComplete(b *testing.B) {
	srv := benchServer(b)
	system, pid := startGateway(b, newClient(b, srv.URL))
	req := completionRequest("agent-1")
	b.ReportAllocs()
	for b.Loop() {
		res, err := system.Root.RequestFuture(pid, req, testWait).Result()
		if err != nil {
			b.Fatal(err)
		}
		if err := res.(messages.CompletionResponse).Err; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGatewayCompleteParallel drives the gateway from many callers
// at once, as a family of beings does.
func BenchmarkGatewayCompleteParallel(b *testing.B) {
	srv := benchServer(b)
	system, pid := startGateway(b, newClient(b, srv.URL))
	req := completionRequest("agent-1")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := system.Root.RequestFuture(pid, req, testWait).Result()
			if err != nil {
				b.Error(err)
				return
			}
			if err := res.(messages.CompletionResponse).Err; err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPrepareAndParse is the client's CPU work without the network:
// serialize, hash, sign, and validate a reply.
func BenchmarkPrepareAndParse(b *testing.B) {
	p := sampleParams()
	reply, _ := json.Marshal(bramatest.TextReply("ok", bramatest.Usage(100, 10)).JSON)
	key := []byte(testSecret)
	c := &Client{maxField: gateway.FieldMaxTokens}
	b.ReportAllocs()
	for b.Loop() {
		body, err := c.encode(p)
		if err != nil {
			b.Fatal(err)
		}
		_ = signature(key, p.AgentID, 1700000000, bodyDigest(body))
		if _, err := parseCompletion(reply, false, chat.Usage{}); err != nil {
			b.Fatal(err)
		}
	}
}

// memoryTransport answers every request at once from memory, so the
// in-memory benchmarks measure the runtime's own work without sockets.
type memoryTransport struct{ body []byte }

func (m memoryTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode:    http.StatusOK,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(m.body)),
		ContentLength: int64(len(m.body)),
		Request:       r,
	}, nil
}

func memoryClient(b *testing.B, mods ...func(*ClientConfig)) *Client {
	body, err := json.Marshal(bramatest.TextReply("ok", bramatest.Usage(100, 10)).JSON)
	if err != nil {
		b.Fatal(err)
	}
	return newClient(b, "http://brama.invalid", append([]func(*ClientConfig){func(cfg *ClientConfig) { cfg.Transport = memoryTransport{body: body} }}, mods...)...)
}

// bearerClient is memoryClient for a provider with a bearer key and
// lenient validation, with retries on (none is taken).
func bearerClient(cfg *ClientConfig) {
	cfg.Auth, cfg.APIKey, cfg.Secret, cfg.Retries = gateway.AuthBearer, identity.NewSecret([]byte(testAPIKey)), identity.Secret{}, 2
}

// BenchmarkClientCompleteInMemoryBearer is BenchmarkClientCompleteInMemory
// against another gateway: a bearer key instead of the HMAC signature,
// lenient validation, retries armed.
func BenchmarkClientCompleteInMemoryBearer(b *testing.B) {
	c := memoryClient(b, bearerClient)
	ctx := testContext(b)
	p := sampleParams()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Complete(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGatewayCompleteInMemoryBearer is the gateway in front of it,
// with a prices file of two models to look the price up in.
func BenchmarkGatewayCompleteInMemoryBearer(b *testing.B) {
	system, pid := startGateway(b, memoryClient(b, bearerClient), func(cfg *GatewayConfig) {
		cfg.Prices = prices.Book{File: prices.Table{"test-model": {Input: testkit.USD("0.15"), Output: testkit.USD("0.6")}, "other": {}}}
	})
	req := completionRequest("agent-1")
	b.ReportAllocs()
	for b.Loop() {
		res, err := system.Root.RequestFuture(pid, req, testWait).Result()
		if err != nil {
			b.Fatal(err)
		}
		resp := res.(messages.CompletionResponse)
		if resp.Err != nil || resp.Prices == nil {
			b.Fatal(resp.Err, resp.Prices)
		}
	}
}

// BenchmarkClientCompleteInMemory is the bare client without a network.
func BenchmarkClientCompleteInMemory(b *testing.B) {
	c := memoryClient(b)
	ctx := testContext(b)
	p := sampleParams()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Complete(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGatewayCompleteInMemory is the gateway without a network: its
// difference from BenchmarkClientCompleteInMemory is exactly the actor
// path (request future, mailbox, worker goroutine, answer by message).
func BenchmarkGatewayCompleteInMemory(b *testing.B) {
	system, pid := startGateway(b, memoryClient(b))
	req := completionRequest("agent-1")
	b.ReportAllocs()
	for b.Loop() {
		res, err := system.Root.RequestFuture(pid, req, testWait).Result()
		if err != nil {
			b.Fatal(err)
		}
		if err := res.(messages.CompletionResponse).Err; err != nil {
			b.Fatal(err)
		}
	}
}
