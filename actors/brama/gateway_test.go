package brama

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// startGateway spawns a gateway named "brama" on a fresh actor system and
// stops both at cleanup.
func startGateway(t testing.TB, c *Client, mods ...func(*GatewayConfig)) (*actor.ActorSystem, *actor.PID) {
	t.Helper()
	cfg := GatewayConfig{Client: c, Temperature: 0.2}
	for _, m := range mods {
		m(&cfg)
	}
	system := quietSystem()
	pid, err := system.Root.SpawnNamed(Props(cfg), "brama")
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = system.Root.StopFuture(pid).Wait()
		system.Shutdown()
	})
	return system, pid
}

func completionRequest(agent string) messages.CompletionRequest {
	p := sampleParams()
	return messages.CompletionRequest{AgentID: agent, Model: p.Model, Messages: p.Messages, Tools: p.Tools}
}

func askCompletion(t testing.TB, system *actor.ActorSystem, pid *actor.PID, req messages.CompletionRequest) messages.CompletionResponse {
	t.Helper()
	res, err := system.Root.RequestFuture(pid, req, testWait).Result()
	require.NoError(t, err)
	resp, ok := res.(messages.CompletionResponse)
	require.True(t, ok, "got %T", res)
	return resp
}

func describe(t testing.TB, system *actor.ActorSystem, pid *actor.PID) messages.Description {
	t.Helper()
	res, err := system.Root.RequestFuture(pid, messages.DescribeRequest{}, testWait).Result()
	require.NoError(t, err)
	d, ok := res.(messages.Description)
	require.True(t, ok, "got %T", res)
	return d
}

// waitFor receives from ch within the test deadline.
func waitFor[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testWait):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

func TestGatewayAnswersWithValidatedCompletion(t *testing.T) {
	srv := newServer(t)
	srv.Enqueue(bramatest.ToolCallsReply(bramatest.Usage(30, 7), bramatest.Call("c1", "echo", `{"text":"x"}`)))
	system, pid := startGateway(t, newClient(t, srv.URL), func(cfg *GatewayConfig) { cfg.MaxTokens = 99 })

	resp := askCompletion(t, system, pid, completionRequest("agent-ada"))
	require.NoError(t, resp.Err)
	require.Equal(t, FinishToolCalls, resp.FinishReason)
	require.Equal(t, chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{bramatest.Call("c1", "echo", `{"text":"x"}`)}}, resp.Message)
	require.Equal(t, bramatest.Usage(30, 7), resp.Usage)
	require.Positive(t, resp.Elapsed)

	got := srv.Completions()
	require.Len(t, got, 1)
	require.Equal(t, "agent-ada", got[0].Header.Get("X-Agent-Id"))
	require.Equal(t, 99, got[0].Completion.MaxTokens)
	require.Equal(t, "0.2", got[0].Completion.Temperature.String())
}

// TestGatewayPricesAndLowersMaxTokens: the answer carries the per-model
// price of the response's model (else the requested one's, else none), a
// request's own max tokens replaces the configured one, and a billed
// rejection carries its usage.
func TestGatewayPricesAndLowersMaxTokens(t *testing.T) {
	srv := newServer(t)
	table := prices.Table{
		"test-model": {Input: testkit.USD("1"), Output: testkit.USD("2")},
		"answerer":   {Input: testkit.USD("3"), Output: testkit.USD("4")},
	}
	system, pid := startGateway(t, newClient(t, srv.URL), func(cfg *GatewayConfig) { cfg.MaxTokens = 99; cfg.Prices = prices.Book{File: table} })

	srv.Enqueue(bramatest.ModelReply("answerer", bramatest.TextReply("a", bramatest.Usage(1, 1))))
	req := completionRequest("agent-ada")
	req.MaxTokens = 40
	resp := askCompletion(t, system, pid, req)
	require.NoError(t, resp.Err)
	require.Equal(t, "answerer", resp.Model)
	require.Equal(t, "3/4", resp.Prices.Input.String()+"/"+resp.Prices.Output.String())
	require.Equal(t, 40, srv.Completions()[0].Completion.MaxTokens)

	srv.Enqueue(bramatest.ModelReply("unlisted", bramatest.TextReply("b", bramatest.Usage(1, 1))))
	resp = askCompletion(t, system, pid, completionRequest("agent-ada"))
	require.Equal(t, "1/2", resp.Prices.Input.String()+"/"+resp.Prices.Output.String())
	require.Equal(t, 99, srv.Completions()[1].Completion.MaxTokens)

	other := completionRequest("agent-ada")
	other.Model = "elsewhere"
	srv.Enqueue(bramatest.ModelReply("unlisted", bramatest.TextReply("c", bramatest.Usage(1, 1))))
	resp = askCompletion(t, system, pid, other)
	require.Nil(t, resp.Prices, "neither listed: the ledger's two prices")

	srv.Enqueue(bramatest.StopWithToolsReply(bramatest.Usage(8, 2), bramatest.Call("c1", "echo", `{}`)))
	resp = askCompletion(t, system, pid, completionRequest("agent-ada"))
	requireBramaError(t, resp.Err, fault.Permanent, "brama: stop finish reason with tool calls")
	require.True(t, resp.Billed)
	require.Equal(t, bramatest.Usage(8, 2), resp.Usage)
	require.NotNil(t, resp.Prices)
}

// TestGatewayRunsCompletionsConcurrently holds every request at the
// server until all N have arrived: if the gateway serialized them, the
// first would wait forever for the others and the barrier would time out.
func TestGatewayRunsCompletionsConcurrently(t *testing.T) {
	const n = 16
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
	)
	srv := newServer(t, func(cfg *bramatest.Config) {
		cfg.Handler = func(r *bramatest.Request) bramatest.Reply {
			mu.Lock()
			arrived++
			if arrived == n {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
				return bramatest.TextReply("hello "+r.Header.Get("X-Agent-Id"), bramatest.Usage(1, 1))
			case <-time.After(testWait):
				return bramatest.ErrorReply(http.StatusBadRequest, "barrier timed out")
			}
		}
	})
	system, pid := startGateway(t, newClient(t, srv.URL))

	futures := make([]*actor.Future, n)
	for i := range futures {
		futures[i] = system.Root.RequestFuture(pid, completionRequest(fmt.Sprintf("being-%02d", i)), testWait+5*time.Second)
	}
	for i, f := range futures {
		res, err := f.Result()
		require.NoError(t, err)
		resp := res.(messages.CompletionResponse)
		require.NoError(t, resp.Err)
		// Each answer reaches the being that asked.
		require.Equal(t, fmt.Sprintf("hello being-%02d", i), resp.Message.Content)
	}
	d := describe(t, system, pid)
	require.Equal(t, int64(0), d.Figures["in_flight"])
	require.Equal(t, uint64(n), d.Figures["completed"])
}

// TestGatewayMailboxStaysFree asks the gateway to describe itself while a
// completion is held at the server.
func TestGatewayMailboxStaysFree(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	srv := newServer(t, func(cfg *bramatest.Config) {
		cfg.Handler = func(*bramatest.Request) bramatest.Reply {
			close(arrived)
			select {
			case <-release:
			case <-time.After(testWait):
			}
			return bramatest.TextReply("done", bramatest.Usage(1, 1))
		}
	})
	system, pid := startGateway(t, newClient(t, srv.URL))
	f := system.Root.RequestFuture(pid, completionRequest("agent-1"), testWait)
	waitFor(t, arrived, "the request to reach the server")

	d := describe(t, system, pid)
	require.Equal(t, "brama", d.Kind)
	require.Equal(t, "brama", d.Name)
	require.Equal(t, "running", d.Status)
	require.Equal(t, int64(1), d.Figures["in_flight"])

	close(release)
	res, err := f.Result()
	require.NoError(t, err)
	require.NoError(t, res.(messages.CompletionResponse).Err)
}

func TestGatewayCountsErrorsByClass(t *testing.T) {
	srv := newServer(t)
	dropped := bramatest.TextReply("cut", bramatest.Usage(1, 1))
	dropped.DropMidResponse = true
	srv.Enqueue(
		bramatest.TextReply("fine", bramatest.Usage(1, 1)),
		bramatest.ErrorReply(400, "bad request"),
		bramatest.ErrorReply(503, "busy"),
		bramatest.ErrorReply(429, "slow"),
		dropped,
	)
	system, pid := startGateway(t, newClient(t, srv.URL))
	wantKinds := []fault.Kind{fault.KindNone, fault.Permanent, fault.Transient, fault.Transient, fault.Indeterminate}
	for _, want := range wantKinds {
		resp := askCompletion(t, system, pid, completionRequest("agent-1"))
		if want == fault.KindNone {
			require.NoError(t, resp.Err)
			continue
		}
		requireBramaKind(t, resp.Err, want)
	}
	d := describe(t, system, pid)
	require.Equal(t, uint64(1), d.Figures["completed"])
	require.Equal(t, map[string]uint64{"permanent": 1, "transient": 2, "indeterminate": 1}, d.Figures["errors"])
	require.Equal(t, int64(0), d.Figures["in_flight"])
}

func TestGatewayPermanentErrorExitsThree(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, srv.URL, func(cfg *ClientConfig) { cfg.Secret = configSecret("wrong") })
	system, pid := startGateway(t, c)
	resp := askCompletion(t, system, pid, completionRequest("agent-1"))
	requireBramaError(t, resp.Err, fault.Permanent, "brama: HTTP 401: invalid signature")
	require.Equal(t, 3, fault.ExitCode(resp.Err))
}

func TestGatewayRefusesRequestWithoutSender(t *testing.T) {
	srv := newServer(t)
	srv.Enqueue(bramatest.TextReply("must not be reached", bramatest.Usage(1, 1)))
	system, pid := startGateway(t, newClient(t, srv.URL))
	system.Root.Send(pid, completionRequest("agent-1"))
	d := describe(t, system, pid) // processed after the send: same mailbox
	require.Equal(t, int64(0), d.Figures["in_flight"])
	require.Empty(t, srv.Requests())
}

func TestGatewayModelsAndHealth(t *testing.T) {
	srv := newServer(t, func(cfg *bramatest.Config) { cfg.Models = []string{"m-1", "m-2"} })
	system, pid := startGateway(t, newClient(t, srv.URL))

	res, err := system.Root.RequestFuture(pid, messages.ModelsRequest{}, testWait).Result()
	require.NoError(t, err)
	require.Equal(t, messages.ModelsResponse{IDs: []string{"m-1", "m-2"}, Selectors: true}, res)

	res, err = system.Root.RequestFuture(pid, messages.HealthRequest{}, testWait).Result()
	require.NoError(t, err)
	require.Equal(t, messages.HealthResponse{}, res)
}

// TestGatewayShutdownAbandonsAfterGrace stops the gateway while a
// completion is held at the server: after the grace the call is cancelled
// and answered as indeterminate.
func TestGatewayShutdownAbandonsAfterGrace(t *testing.T) {
	arrived := make(chan struct{})
	srv := newServer(t, func(cfg *bramatest.Config) {
		cfg.Handler = func(*bramatest.Request) bramatest.Reply {
			close(arrived)
			return bramatest.Reply{Stall: true}
		}
	})
	system, pid := startGateway(t, newClient(t, srv.URL), func(cfg *GatewayConfig) { cfg.ShutdownGrace = 50 * time.Millisecond })
	f := system.Root.RequestFuture(pid, completionRequest("agent-1"), testWait)
	waitFor(t, arrived, "the request to reach the server")

	system.Root.Stop(pid)
	res, err := f.Result()
	require.NoError(t, err)
	resp := res.(messages.CompletionResponse)
	requireBramaError(t, resp.Err, fault.Indeterminate, "brama: completion abandoned at shutdown")
}

// TestGatewayShutdownLetsCallFinishWithinGrace stops the gateway while a
// completion is in flight and then lets the server answer: the being
// still gets its completion.
func TestGatewayShutdownLetsCallFinishWithinGrace(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	srv := newServer(t, func(cfg *bramatest.Config) {
		cfg.Handler = func(*bramatest.Request) bramatest.Reply {
			close(arrived)
			select {
			case <-release:
				return bramatest.TextReply("finished late", bramatest.Usage(2, 2))
			case <-time.After(testWait):
				return bramatest.ErrorReply(400, "never released")
			}
		}
	})
	system, pid := startGateway(t, newClient(t, srv.URL), func(cfg *GatewayConfig) { cfg.ShutdownGrace = testWait })
	f := system.Root.RequestFuture(pid, completionRequest("agent-1"), testWait)
	waitFor(t, arrived, "the request to reach the server")

	_, err := system.Root.StopFuture(pid).Result() // the actor is gone...
	require.NoError(t, err)
	close(release) // ...and only now does Brama answer
	res, err := f.Result()
	require.NoError(t, err)
	resp := res.(messages.CompletionResponse)
	require.NoError(t, resp.Err)
	require.Equal(t, "finished late", resp.Message.Content)
}

// TestGatewayPoolBoundsConcurrency: with two workers, five completions
// asked at once reach the server at most two at a time, the others wait
// (the waiting figure) and every one is answered, in order of asking.
func TestGatewayPoolBoundsConcurrency(t *testing.T) {
	var mu sync.Mutex
	active, peak := 0, 0
	arrived, release := make(chan string, 5), make(chan struct{})
	srv := newServer(t, func(cfg *bramatest.Config) {
		cfg.Handler = func(r *bramatest.Request) bramatest.Reply {
			mu.Lock()
			active++
			peak = max(peak, active)
			mu.Unlock()
			arrived <- r.Header.Get("X-Agent-Id")
			select {
			case <-release:
			case <-time.After(testWait):
			}
			mu.Lock()
			active--
			mu.Unlock()
			return bramatest.TextReply("done", bramatest.Usage(1, 1))
		}
	})
	system, pid := startGateway(t, newClient(t, srv.URL), func(cfg *GatewayConfig) { cfg.Workers = 2 })
	var futures []*actor.Future
	for i := range 5 {
		futures = append(futures, system.Root.RequestFuture(pid, completionRequest(fmt.Sprintf("agent-%d", i)), testWait))
	}
	first := []string{<-arrived, <-arrived}
	require.ElementsMatch(t, []string{"agent-0", "agent-1"}, first, "the first two asked go first")
	d := describe(t, system, pid)
	require.Equal(t, int64(5), d.Figures["in_flight"])
	require.Equal(t, 3, d.Figures["waiting"])
	close(release)
	for _, f := range futures {
		res, err := f.Result()
		require.NoError(t, err)
		require.NoError(t, res.(messages.CompletionResponse).Err)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, peak, "never more than the pool's workers on the wire")
}

// TestEncodedMessagesSentAsParsed: a request whose window comes encoded
// (a being's held conversation) is the same body as one whose messages
// all come parsed.
func TestEncodedMessagesSentAsParsed(t *testing.T) {
	p := sampleParams()
	p.Messages = append(p.Messages,
		chat.Message{Role: chat.RoleUser, Content: "<b>a & b</b> \u2028 \"quoted\""},
		chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "f", Arguments: `{"x":"<y>"}`}}}},
	)
	c := &Client{maxField: gateway.FieldMaxTokens}
	want, err := c.encode(p)
	require.NoError(t, err)
	split := p
	split.Messages = p.Messages[:1]
	for _, m := range p.Messages[1:] {
		raw, err := json.Marshal(m)
		require.NoError(t, err)
		split.Encoded = append(split.Encoded, state.Pack(raw))
	}
	got, err := c.encode(split)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}
