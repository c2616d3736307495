// Package being is the being actor: one autonomous digital being living cycle
// by cycle (docs/cycle.md#anatomy-of-a-cycle). It is the single writer of its
// state directory, the parent of its ledger, its Las actor and the child
// beings it spawns, and a client of the family's brama gateway. Every step of
// a cycle that waits on another actor continues by message, so
// the mailbox is never blocked on Brama or Las: the debug endpoint and stop
// requests are served while a model call is in flight.
//
// The being is a state machine over typed events (phase.go): its durable
// writes go to its durable-step engine (internal/durable), which answers
// Committed or Checkpointed with the tag of what follows (steps.go); its
// asks to other actors and its jobs on worker goroutines answer with a
// reply of a named kind (replies.go). No step keeps a continuation.
package being

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/ledger"
	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/mailbox"
	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/budget"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/supervision/fault"
)

// Being is the actor. Create it with Props. Its fields are grouped by
// concern; the cycle in progress, a shutdown in progress and the boot's
// repair of the family live in values of their own (cycleRun, stopping,
// booting) that exist only while they run.
type Being struct {
	opts Options
	log  *slog.Logger
	// me names the being to the observer (set once the state is loaded).
	me observe.Being

	// engine makes the being's steps durable and owns its files; st is
	// the state as applied (every event of it durable).
	engine *durable.Engine
	st     *state.Being
	// held says the being loaded as its placement's holder; fence is
	// the fence its steps pass (nil when alone).
	held  bool
	fence durable.Fence

	ledger  *actor.PID
	las     lasSide
	catalog *catalogView
	tools   *builtin.Tools

	children []*childRef

	// phase is where the being is in its life (phase.go); cycle is set
	// while a cycle runs, stop from the first stop request on, boot
	// while the boot repairs the family.
	phase phase
	cycle *cycleRun
	stop  *stopping
	boot  *booting
	// booted is set once the boot step is durable: only then may the
	// being write (a refused boot leaves its directory as it was).
	booted bool
	// tierApplied is set by the incarnation's first framing, which
	// applies the survival tier afresh (tierChange).
	tierApplied bool
	// epoch invalidates replies to work abandoned at shutdown or by a
	// crash.
	epoch uint64
	next  schedule

	health health
	purse  purse
	// cache is what the stable prompt layout keeps between cycles
	// (conversation.go); nil in the seed layout.
	cache *promptCache
	// inbound are the funds and messages waiting for their step,
	// flushing those whose step is in flight (operator.go).
	inbound, flushing []*inbound
	// post is the delivery of the outbox (post.go).
	post post
}

// lasSide is what the being knows of its Las actor: its pid, the link
// (phase.go), the Las part of the catalogue (offered while the link is
// lasUp) and the reason of its last restart (docs/las.md#las-at-boot).
type lasSide struct {
	pid    *actor.PID
	link   lasLink
	tools  []chat.Tool
	reason string
}

// schedule is what lies between two cycles: the timer of the next tick
// (or of the spend limiter's retry), a tick that came while a write was
// in flight, the count of consecutive cycles that ended in an error (the
// wait before the next doubles with each, docs/cycle.md#failing-cycles),
// and the report of the cycle whose end is being written.
type schedule struct {
	cancel   func() bool
	deferred bool
	failed   int
	// gateway is whether the last failing cycle failed on the gateway
	// (transiently): the wait then grows to 30 s at most.
	gateway bool
	ended   *cycleEnd
	// roused says a fund woke a dormant being whose sleep wakes on
	// messages (awaken): its first cycle does not wait for the sleep.
	roused bool
}

// health is what the supervisor told of the being's restarts.
type health struct {
	restarts    int
	lastFailure string
}

// purse is the being's money besides its budget: the reservation of the
// last completion (the estimate of the next one's), whether a spend
// limit makes it wait, whether the balance could not pay for the
// smallest completion (exhausted even with remaining above zero), and
// the money of children that stopped (BeingStopped), which the family
// ledger still counts.
type purse struct {
	lastReservation money.Amount
	// billed is the highest prices a completion was billed at (zero
	// until a response named a model pricier than the one reserved):
	// every reservation holds at least these.
	billed    prices.Pair
	throttled bool
	exhausted bool
	// unpaid is the reservation of the smallest completion that the
	// balance could not pay when the being became exhausted (nil before):
	// the reason its stopped event gives.
	unpaid *money.Amount
	// prompt is the last answered request's prompt and its reported
	// prompt tokens, the start of the next reservation's tight bound
	// (nil: none; in memory only, a restarted being starts from bytes).
	prompt                                       *sentPrompt
	departedHeld, departedEarned, departedFunded money.Amount
}

var _ actor.Actor = (*Being)(nil)

// Props returns the props of a being actor with the given options. The
// being supervises its children with supervision.ForBeingChildren: Las
// restarts with capped backoff, child beings restart from their saved
// state, and anything else escalates.
func Props(opts Options) *actor.Props {
	strategy := supervision.ForBeingChildren(supervision.BeingChildrenConfig{})
	return actor.PropsFromProducer(func() actor.Actor { return New(opts) }, actor.WithSupervisor(strategy), actor.WithDispatcher(mailbox.Shared))
}

// New returns a being actor; it loads its state when it starts.
func New(opts Options) *Being {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Being{opts: opts, log: log, epoch: incarnations.Add(1) << 32}
}

// incarnations numbers every being value ever made. A restarted being is
// a new value under the same PID, and its predecessor may still post
// ticks (its replies run until the supervisor's backoff ends): the
// epoch of each incarnation starts in its own range so that none of them
// is mistaken for the new incarnation's own.
var incarnations atomic.Uint64

// onPanic marks a crashed incarnation before the panic reaches the
// supervisor: until the restart (which waits out the backoff) protoactor
// still runs replies of this incarnation, and they must do nothing — no
// tool call, no save — so the successor starts from the saved state.
func (b *Being) onPanic() {
	if r := recover(); r != nil {
		b.epoch++
		b.cancelTimer()
		if b.engine != nil {
			b.engine.Cancel()
		}
		panic(r)
	}
}

// tick starts the next cycle; epoch ties it to the incarnation that
// scheduled it.
type tick struct{ epoch uint64 }

// Receive dispatches one message; each case calls a plain method.
func (b *Being) Receive(ctx actor.Context) {
	defer b.onPanic()
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		b.handleStarted(ctx)
	case *actor.Stopping:
		b.handleStopping()
	case *actor.Restarting:
		b.handleStopping()
	case *actor.Terminated:
		b.handleTerminated(ctx, msg)
	case tick:
		if msg.epoch == b.epoch {
			b.startCycle(ctx)
		}
	case durable.Signal:
		if b.engine != nil {
			b.onDurable(ctx, b.engine.Handle(msg))
		}
	case messages.StopBeing:
		b.handleStop(ctx, msg)
	case messages.BeingStopped:
		b.handleChildStopped(ctx, msg)
	case messages.SubtreeStopped:
		b.handleSubtreeStopped(ctx)
	case messages.DescribeRequest:
		ctx.Respond(b.describe(ctx))
	case messages.LedgerFiguresRequest:
		ctx.Respond(b.describeLedger())
	case graceExpired:
		b.handleGraceExpired(ctx, msg)
	case messages.LasCatalogChanged, messages.LasRestarted, messages.LasSurfaceMissing, messages.LasUnavailable, messages.LasWarning:
		b.handleLasEvent(ctx, msg)
	case admitRetry:
		b.handleAdmitRetry(ctx, msg)
	case redeliver:
		b.handleRedeliver(ctx, msg)
	case supervision.Restarted:
		b.health = health{restarts: msg.Restarts, lastFailure: msg.Reason}
	case messages.FundRequest:
		b.handleFund(ctx, msg)
	case messages.MessageRequest:
		b.handleMessage(ctx, msg)
	case messages.ReviveChild:
		b.handleReviveChild(ctx, msg)
	case messages.BeingEnded:
		b.handleChildLife(msg.ID, true)
	case messages.BeingRevived:
		b.handleChildLife(msg.ID, false)
	case messages.InjectPanic:
		if b.opts.FaultInjection {
			panic(errors.New("being: injected panic"))
		}
	}
	// Warnings of handlers outside a cycle (Las news, a child's end) are
	// journaled now; a cycle's go with its next step.
	b.flushWarnings(ctx)
}

// handleStarted loads the state directory, opens the journal, spawns the
// ledger and Las, brings back recorded children and starts living.
func (b *Being) handleStarted(ctx actor.Context) {
	if err := b.load(ctx); err != nil {
		b.failStart(ctx, err)
		return
	}
	b.st.HoldEncoded() // conversation.go
	b.log = b.log.With("being", b.st.Identity.Name, "agent_id", b.st.Identity.AgentID)
	b.engine.SetLogger(b.log)
	b.me = observe.Being{Name: b.st.Identity.Name, ID: b.beingID(), AgentID: b.st.Identity.AgentID}
	if err := b.opts.Pricing.Validate(); err != nil {
		b.failStart(ctx, err) // already of class configuration
		return
	}
	tools, err := builtin.New(builtin.Env{
		Workspace: b.opts.Workspace,
		Now:       b.opts.clock,
		Funding:   b.opts.Funding,
	})
	if err != nil {
		b.failStart(ctx, fault.Errorf(fault.ClassConfiguration, "%w", err))
		return
	}
	b.tools = tools
	pid, err := ctx.SpawnNamed(ledger.Props(b.st.Identity.Name), supervision.LedgerChildName)
	if err != nil {
		b.failStart(ctx, fault.Errorf(fault.ClassRuntime, "spawn ledger: %w", err))
		return
	}
	b.ledger = pid
	b.startLas(ctx)
}

func (b *Being) failStart(ctx actor.Context, err error) {
	b.log.Error("being cannot start", "err", err)
	b.stopWith(ctx, err)
}

// engineConfig is the configuration of the being's durable-step engine;
// its signals come back through ctx's mailbox (none when ctx has no
// actor system: a being driven handler by handler, whose writes run
// inline).
func (b *Being) engineConfig(ctx actor.Context) durable.Config {
	cfg := durable.Config{
		Writers: b.opts.Writers, Inline: b.opts.inline, AfterFunc: b.opts.clockAfter, Now: b.opts.clock,
		Fault: b.opts.StorageFault, CheckpointEvents: b.opts.CheckpointEvents, SegmentBytes: b.opts.SegmentBytes,
		Observer: b.opts.Observer, Log: b.log, Fence: b.fence, Secrets: b.opts.Secrets,
	}
	if ctx != nil {
		if system := ctx.ActorSystem(); system != nil {
			self := ctx.Self()
			cfg.Post = func(s durable.Signal) { system.Root.Send(self, s) }
		}
	}
	return cfg
}

// load reads the being's state: the checkpoint, then the journal
// events after it (docs/state.md#resume-and-recovery). A fresh being
// (Options.Fresh) has no files yet and reads nothing; its first durable
// write is the boot step. Loading writes nothing.
func (b *Being) load(ctx actor.Context) error {
	if b.opts.Fresh != nil {
		st := *b.opts.Fresh
		b.st = &st
		b.engine = durable.New(b.engineConfig(ctx))
		return nil
	}
	var (
		engine *durable.Engine
		st     *state.Being
		err    error
	)
	held, fence, err := b.opts.placement().Hold(b.opts.StateDir)
	if err != nil {
		return err
	}
	b.held, b.fence = held != nil, fence
	if held != nil {
		engine, st, err = durable.OpenHeld(b.opts.StateDir, *held, b.engineConfig(ctx))
	} else {
		engine, st, err = durable.Open(b.opts.StateDir, b.engineConfig(ctx))
	}
	if err != nil {
		return err
	}
	b.engine, b.st = engine, st
	if held != nil && held.Untrusted > 0 {
		b.warn(fmt.Sprintf("left out %d journal event(s) an earlier holder wrote but never committed", held.Untrusted))
	}
	if err := b.recover(engine.Loaded()); err != nil {
		return err
	}
	b.settleMode()
	b.closeInterruptedCalls()
	return nil
}

// settleMode makes a child dormant when its committed life says it
// ended (exhausted or failed), and a dormant child live when it says it
// did not (a fund un-ended it): its recovered state, the newest trusted
// checkpoint with every committed event after it applied. Its parent
// chose its mode from the child's state.json
// (docs/family.md#resume-of-children), but a holder that died after
// committing the child's end (or a fund) but before its last checkpoint
// left a state.json that lags it, and under a cluster that file is only
// the child's first (docs/cluster.md#the-holders-files). A spread
// family's root is settled alike: its member records the family's end
// instead of reviving it once it is exhausted (a root that failed is
// tried again, as in one process).
func (b *Being) settleMode() {
	exhausted := b.st.Status == state.StatusExhausted
	ended := exhausted || b.st.Status == state.StatusFailed
	switch {
	case b.opts.Mode == Dormant && b.isChild() && !ended && !b.opts.placement().ChildrenElsewhere():
		// Its parent read a state.json that lags a fund which un-ended
		// it: it lives.
		b.opts.Mode = Run
	case b.opts.Mode != Run:
	case (b.isChild() && ended) || (b.opts.placement().ChildrenElsewhere() && exhausted):
		b.opts.Mode = Dormant
	}
}

// recover brings the checkpoint up to date with the journal. A
// checkpoint with journal_seq catches up by applying every later event;
// one without (the reference's, or this runtime's before it kept a
// write-ahead journal) covers the whole journal, so only its budget may
// lag: a journal that cannot explain it is reported and the saved budget
// kept.
func (b *Being) recover(events []state.Event) error {
	if b.st.JournalSeq == nil {
		return b.reconcile(events)
	}
	from := b.st.Seq()
	if last := b.engine.NextSeq() - 1; last > from && (len(events) == 0 || events[0].Seq > from+1) {
		// A crash between a rotation and its checkpoint: the events
		// past the checkpoint begin in the previous segment.
		all, err := state.ReadAll(b.opts.StateDir)
		if err != nil {
			return err
		}
		events = all
	}
	applied := 0
	for _, e := range events {
		if e.Seq > from {
			b.st.Apply(e)
			applied++
		}
	}
	b.engine.SetCheckpointed(from)
	if applied > 0 {
		b.log.Info("caught up with the journal", "events", applied)
	}
	return nil
}

// reconcile is recover for a checkpoint without journal_seq.
func (b *Being) reconcile(events []state.Event) error {
	recovered, applied, err := budget.Recover(b.st.Budget, events, b.opts.Pricing)
	switch {
	case err != nil:
		b.warn("budget not reconciled with the journal: " + err.Error())
	case applied > 0:
		b.st.Budget = recovered
		b.warn(fmt.Sprintf("recovered %d money event(s) from the journal after a crash", applied))
	}
	seq := b.engine.NextSeq() - 1
	b.st.JournalSeq = &seq
	return nil
}

// closeInterruptedCalls answers every tool call in the conversation that
// has no result, wherever it stands (docs/state.md#interrupted-tool-calls):
// its effect is unknown and it is never replayed, and without an answer
// every later request would carry a tool call with no result, which
// OpenAI-compatible servers refuse.
func (b *Being) closeInterruptedCalls() {
	o := outcome.Unknown("interrupted", "the being stopped before this call finished")
	conv, closed := state.CloseUnanswered(b.st.Conversation, func(call chat.ToolCall) chat.Message {
		return chat.Message{Role: chat.RoleTool, ToolCallID: call.ID, Name: call.Function.Name, Content: o.Envelope()}
	})
	if closed > 0 {
		b.st.Conversation = conv
		b.warn(fmt.Sprintf("closed %d tool call(s) interrupted by the previous stop", closed))
	}
}

// handleStopping closes the files when the actor stops or restarts
// without a graceful shutdown (a crash, or the parent stopping abruptly).
func (b *Being) handleStopping() {
	b.phase = phaseStopped // this incarnation is over, gracefully or not
	b.epoch++
	b.cancelTimer()
	b.stopRedelivery()
	if b.engine != nil {
		b.engine.Close()
	}
}

// cancelTimer cancels the sleep before the next cycle (or the spend
// limiter's retry).
func (b *Being) cancelTimer() {
	if b.next.cancel != nil {
		b.next.cancel()
	}
}

func (b *Being) sendParent(ctx actor.Context, msg any) {
	if parent := ctx.Parent(); parent != nil {
		ctx.Send(parent, msg)
	}
}

func (b *Being) String() string {
	if b.st == nil {
		return fmt.Sprintf("being(%s)", b.opts.StateDir)
	}
	return fmt.Sprintf("being(%s)", b.st.Identity.Name)
}
