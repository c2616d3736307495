package brama

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
)

// Defaults of GatewayConfig.
const (
	DefaultMaxTokens     = 2048
	DefaultShutdownGrace = 10 * time.Second
	// DefaultWorkers bounds the completions a family has on the wire at
	// once; it matches the client's kept-alive connections.
	DefaultWorkers = 64
)

// GatewayConfig configures the gateway actor. Zero fields take the
// documented defaults.
type GatewayConfig struct {
	// Client calls Brama; required. It is shared by every request.
	Client *Client
	// MaxTokens is sent with every completion. Zero means
	// DefaultMaxTokens.
	MaxTokens int
	// Temperature is sent with every completion as given: zero is a
	// valid temperature, so configuration supplies its own default (0.2).
	Temperature float64
	// ShutdownGrace is how long completions still in flight when the
	// gateway stops may take to finish before they are cancelled and
	// answered as indeterminate. Zero means DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// Prices are the per-model prices of BRAMA_PRICES_FILE over the
	// shipped catalogue (docs/brama.md#per-model-prices). The zero Book
	// lists no model: every completion is priced by the ledger's
	// configured two prices.
	Prices prices.Book
	// Workers is how many completions run at once, each on a worker
	// goroutine of the gateway's pool; the others wait in order, as
	// requests that are not yet encoded (docs/brama.md#concurrency).
	// Zero means DefaultWorkers.
	Workers int
	// Logger receives the gateway's log lines. Nil discards them.
	Logger *slog.Logger
}

// Gateway is the family's brama actor (docs/concepts.md#the-actor-tree,
// docs/brama.md#overview). It accepts messages.CompletionRequest,
// messages.ModelsRequest, messages.HealthRequest and messages.DescribeRequest
// (values, as every message is) and answers each with the matching response
// value.
//
// Every completion runs on a worker goroutine of a bounded pool
// (GatewayConfig.Workers) that answers the sender captured when the
// request arrived, so the mailbox never waits on HTTP, and a being that
// waits for its completion costs no goroutine of its own: the requests
// beyond the pool wait in a queue, in order. When the actor stops,
// completions in flight get ShutdownGrace to finish; then they are
// cancelled and answered with an indeterminate error, so no request is
// left without an answer.
type Gateway struct {
	cfg   GatewayConfig
	log   *slog.Logger
	state *gatewayState
}

var _ actor.Actor = (*Gateway)(nil)

// gatewayState outlives a restart of the actor: calls in flight keep
// their context and the figures keep counting. It is shared only with
// the gateway's own worker goroutines.
type gatewayState struct {
	base   context.Context // cancelled when the calls are abandoned
	cancel context.CancelFunc

	inFlight      atomic.Int64
	completed     atomic.Uint64
	retried       atomic.Uint64
	permanent     atomic.Uint64
	transient     atomic.Uint64
	indeterminate atomic.Uint64

	mu       sync.Mutex
	stopping bool
	grace    *time.Timer
	// queue holds the completions no worker has taken yet; running is
	// how many workers live, at most workers.
	queue   []func()
	running int
	workers int
}

// Props returns the props of a gateway actor. Spawn exactly one per
// family, named "brama".
func Props(cfg GatewayConfig) *actor.Props {
	if cfg.Client == nil {
		panic("brama: GatewayConfig.Client is required")
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log = log.With("actor", "brama")
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	base, cancel := context.WithCancel(context.Background())
	state := &gatewayState{base: base, cancel: cancel, workers: cfg.Workers}
	return actor.PropsFromProducer(func() actor.Actor {
		return &Gateway{cfg: cfg, log: log, state: state}
	})
}

// Receive dispatches one message.
func (g *Gateway) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Stopping:
		g.handleStopping()
	case messages.CompletionRequest:
		g.handleCompletion(ctx, msg)
	case messages.ModelsRequest:
		g.handleModels(ctx)
	case messages.HealthRequest:
		g.handleHealth(ctx)
	case messages.DescribeRequest:
		ctx.Respond(g.describe())
	}
}

// handleCompletion queues one completion for the worker pool. A request
// without a sender is refused before any cost is incurred: nobody could
// receive, and so account for, the completion.
func (g *Gateway) handleCompletion(ctx actor.Context, req messages.CompletionRequest) {
	sender := ctx.Sender()
	if sender == nil {
		g.log.Warn("completion request without sender refused", "agent_id", req.AgentID)
		return
	}
	p := Params{
		AgentID:      req.AgentID,
		BeingID:      req.BeingID,
		Model:        req.Model,
		Messages:     req.Messages,
		Encoded:      req.Encoded,
		Tools:        req.Tools,
		ToolsEncoded: req.ToolsEncoded,
		MaxTokens:    g.cfg.MaxTokens,
		Temperature:  g.cfg.Temperature,
	}
	if req.MaxTokens > 0 && req.MaxTokens < p.MaxTokens {
		p.MaxTokens = req.MaxTokens // lowered to what the being can pay for
	}
	g.state.inFlight.Add(1)
	system, asked := ctx.ActorSystem(), time.Now()
	g.state.enqueue(func() { g.complete(system, sender, p, asked) })
}

// enqueue hands job to the pool: a worker is started for it while fewer
// than workers run, else it waits for the next free one.
func (s *gatewayState) enqueue(job func()) {
	s.mu.Lock()
	s.queue = append(s.queue, job)
	start := s.running < s.workers
	if start {
		s.running++
	}
	s.mu.Unlock()
	if start {
		go s.work()
	}
}

// work runs queued completions until none is left, then ends: an idle
// family keeps no worker.
func (s *gatewayState) work() {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.running--
			s.mu.Unlock()
			return
		}
		job := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		if len(s.queue) == 0 {
			s.queue = nil // let the backing array go
		}
		s.mu.Unlock()
		job()
	}
}

// waiting is how many completions wait for a worker.
func (s *gatewayState) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// complete runs on a worker goroutine: one Brama call, one answer. The
// figures are updated before the answer is sent, so a being that has its
// answer sees them already counted.
//
// The client's timeout counts from when the being asked, its time in the
// queue included, so the being (which waits that timeout and a margin)
// always hears the answer; a request that waited its whole timeout for a
// worker is answered as a transient failure without being sent.
func (g *Gateway) complete(system *actor.ActorSystem, sender *actor.PID, p Params, asked time.Time) {
	client := g.cfg.Client
	deadline := asked.Add(client.timeout)
	if !time.Now().Before(deadline) {
		err := fault.Upstream(fault.ClassBrama, fault.Transient, "completion waited %s for a free worker and was not sent", client.timeout)
		g.answer(system, sender, &p, &Completion{}, err)
		return
	}
	ctx, cancel := context.WithDeadlineCause(g.state.base, deadline, client.timedOut)
	comp, err := client.Complete(ctx, p)
	cancel()
	g.answer(system, sender, &p, &comp, err)
}

// answer counts, logs and sends the outcome of one completion. It is apart
// from complete so that the worker goroutine's frame stays small while the
// HTTP exchange and the JSON work run beneath it: a larger frame there
// makes every new worker grow (copy) its stack once more.
func (g *Gateway) answer(system *actor.ActorSystem, sender *actor.PID, p *Params, comp *Completion, err error) {
	if err != nil && g.state.base.Err() != nil {
		err = fault.Upstream(fault.ClassBrama, fault.Indeterminate, "completion abandoned at shutdown")
		g.log.Warn("completion abandoned at shutdown", "agent_id", p.AgentID, "elapsed", comp.Elapsed)
	}
	g.state.record(err)
	if comp.Attempts > 1 {
		g.state.retried.Add(uint64(comp.Attempts - 1))
		g.log.Info("completion retried", "agent_id", p.AgentID, "attempts", comp.Attempts)
	}
	g.state.finished()
	if err != nil {
		g.log.Debug("completion failed", "agent_id", p.AgentID, "kind", fault.KindOf(err).String(), "error", err)
	}
	system.Root.Send(sender, g.response(p, comp, err))
}

// response is the answer to one completion, priced by model when the
// prices file lists the response's or the requested model.
func (g *Gateway) response(p *Params, comp *Completion, err error) messages.CompletionResponse {
	resp := messages.CompletionResponse{
		Message:        comp.Message,
		FinishReason:   comp.FinishReason,
		Model:          comp.Model,
		Usage:          comp.Usage,
		Truncated:      comp.Truncated,
		Warnings:       comp.Warnings,
		NoUsage:        comp.NoUsage,
		PromptReserved: comp.PromptReserved,
		Billed:         comp.Billed,
		RequestBytes:   comp.RequestBytes,
		Elapsed:        comp.Elapsed,
		Err:            err,
	}
	if pair, ok, unpriced := g.cfg.Prices.Lookup(comp.Model, p.Model); ok {
		resp.Prices = &pair
		resp.Unpriced = unpriced
	}
	return resp
}

// handleModels lists Brama's models on a worker goroutine.
func (g *Gateway) handleModels(ctx actor.Context) {
	sender := ctx.Sender()
	if sender == nil {
		return
	}
	system := ctx.ActorSystem()
	go func() {
		ids, err := g.cfg.Client.Models(g.state.base)
		system.Root.Send(sender, messages.ModelsResponse{IDs: ids, Selectors: g.cfg.Client.Auth().Brama(), Err: err})
	}()
}

// handleHealth checks Brama's health on a worker goroutine.
func (g *Gateway) handleHealth(ctx actor.Context) {
	sender := ctx.Sender()
	if sender == nil {
		return
	}
	system := ctx.ActorSystem()
	go func() {
		system.Root.Send(sender, messages.HealthResponse{Err: g.cfg.Client.Health(g.state.base)})
	}()
}

// handleStopping gives the completions in flight the shutdown grace and
// then abandons them. It does not wait: the workers answer on their own.
func (g *Gateway) handleStopping() {
	n := g.state.stop(g.cfg.ShutdownGrace)
	if n > 0 {
		g.log.Info("stopping with completions in flight", "in_flight", n, "grace", g.cfg.ShutdownGrace)
	}
	g.cfg.Client.CloseIdleConnections()
}

// describe is the gateway's entry in the debug tree (docs/debug.md#routes).
func (g *Gateway) describe() messages.Description {
	s := g.state
	status := "running"
	s.mu.Lock()
	if s.stopping {
		status = "stopping"
	}
	s.mu.Unlock()
	return messages.Description{
		Kind:   "brama",
		Name:   "brama",
		Status: status,
		Figures: map[string]any{
			"in_flight": s.inFlight.Load(),
			"waiting":   s.waiting(),
			"completed": s.completed.Load(),
			"retried":   s.retried.Load(),
			"errors": map[string]uint64{
				"permanent":     s.permanent.Load(),
				"transient":     s.transient.Load(),
				"indeterminate": s.indeterminate.Load(),
			},
		},
	}
}

// record counts one finished completion.
func (s *gatewayState) record(err error) {
	if err == nil {
		s.completed.Add(1)
		return
	}
	switch fault.KindOf(err) {
	case fault.Transient:
		s.transient.Add(1)
	case fault.Indeterminate:
		s.indeterminate.Add(1)
	default:
		s.permanent.Add(1)
	}
}

// stop marks the gateway stopping and arms the grace; it returns how many
// completions are in flight.
func (s *gatewayState) stop(grace time.Duration) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
	n := s.inFlight.Load()
	if n == 0 {
		s.cancel()
		return 0
	}
	if s.grace == nil {
		s.grace = time.AfterFunc(grace, s.cancel)
	}
	return n
}

// finished ends one completion; the last one to end after the gateway
// began stopping releases the base context early.
func (s *gatewayState) finished() {
	if s.inFlight.Add(-1) != 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping && s.inFlight.Load() == 0 {
		if s.grace != nil {
			s.grace.Stop()
		}
		s.cancel()
	}
}
