// Package being is the being actor: one autonomous digital being living cycle
// by cycle (docs/cycle.md#anatomy-of-a-cycle). It is the single writer of its
// state directory, the parent of its ledger, its Las actor and the child
// beings it spawns, and a client of the family's brama gateway. Every step of
// a cycle that waits on another actor continues by message (ReenterAfter), so
// the mailbox is never blocked on Brama or Las: the debug endpoint and stop
// requests are served while a model call is in flight.
package being

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/ledger"
	"github.com/wisent/singularity/internal/mailbox"
	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
)

// Being is the actor. Create it with Props.
type Being struct {
	opts Options
	log  *slog.Logger
	// me names the being to the observer (set once the state is loaded).
	me observe.Being

	store   *state.Store
	journal *state.Journal
	archive *state.Archive
	st      *state.Being

	ledger *actor.PID
	las    *actor.PID
	// link is what the being knows of its Las; lasTools is the Las part
	// of the catalogue, offered while link is lasUp.
	link     lasLink
	lasTools []chat.Tool
	// lasReason is the reason of Las's last restart (docs/las.md#las-at-boot).
	lasReason string
	catalog   *catalogView

	children []*childRef

	// phase is where the being is in its life (phase.go); cycle is set
	// while a cycle runs, stop from the first stop request on.
	phase phase
	cycle *cycleRun
	stop  *stopping
	// epoch invalidates continuations of work abandoned at shutdown or
	// by a crash.
	epoch uint64
	// stopTick cancels the sleep before the next cycle; tickDeferred is a
	// tick that came while a write was in flight.
	stopTick     func() bool
	tickDeferred bool

	tools *builtin.Tools

	// write is the durable write in flight or held for storage (nil when
	// none); warnings wait to be journaled with the next step.
	write        *write
	nextWrite    uint64
	warnings     []state.Event
	storage      storageFault
	checkpointed uint64 // the seq the last checkpoint includes
	encoder      state.EncodeCache
	// background is the cycle-end checkpoint whose state.json is being
	// written while the being goes on; heldCheckpoint is one that failed,
	// written before the next step; stopAfterCheckpoint is a stop that
	// waits for background to land.
	background          *checkpoint
	heldCheckpoint      *checkpoint
	stopAfterCheckpoint bool
	checkpointLock      sync.Mutex
	archiveBacklog      archiveBacklog
	// booted is set once the boot step is durable: only then may the
	// being write (a refused boot leaves its directory as it was).
	booted bool
	// failedCycles counts consecutive cycles that ended in an error: the
	// wait before the next doubles with each (docs/cycle.md#storage-faults).
	failedCycles int

	restarts    int
	lastFailure string

	// lastReservation is the reservation of the last completion, the
	// estimate of the next one's; throttled is set while a spend limit
	// makes the being wait, admitAgain is what its retry timer resumes.
	lastReservation money.Amount
	throttled       bool
	// departedHeld and departedEarned add up the money of children that
	// stopped (BeingStopped), which the family ledger still counts.
	departedHeld, departedEarned money.Amount
	// exhausted is set once the balance could not pay for the smallest
	// completion: the being is exhausted even with remaining above zero.
	exhausted  bool
	admitAgain func(ctx actor.Context)

	// inline makes durable writes run on the caller's goroutine and
	// continue at once: tests that drive the handlers one by one set it.
	inline bool
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
// ticks (its continuations run until the supervisor's backoff ends): the
// epoch of each incarnation starts in its own range so that none of them
// is mistaken for the new incarnation's own.
var incarnations atomic.Uint64

// onPanic marks a crashed incarnation before the panic reaches the
// supervisor: until the restart (which waits out the backoff) protoactor
// still runs continuations of this incarnation, and they must do nothing
// — no tool call, no save — so the successor starts from the saved state.
func (b *Being) onPanic() {
	if r := recover(); r != nil {
		b.epoch++
		if b.stopTick != nil {
			b.stopTick()
		}
		if b.storage.cancel != nil {
			b.storage.cancel()
		}
		panic(r)
	}
}

// tick starts the next cycle; gen ties it to the timer that sent it.
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
	case messages.StopBeing:
		b.handleStop(ctx, msg)
	case *messages.StopBeing:
		b.handleStop(ctx, *msg)
	case messages.BeingStopped:
		b.handleChildStopped(ctx, msg)
	case messages.DescribeRequest, *messages.DescribeRequest:
		ctx.Respond(b.describe(ctx))
	case graceExpired:
		b.handleGraceExpired(ctx, msg)
	case messages.LasCatalogChanged, messages.LasRestarted, messages.LasSurfaceMissing, messages.LasUnavailable, messages.LasWarning:
		b.handleLasEvent(ctx, msg)
	case writeDone:
		b.handleWriteDone(ctx, msg)
	case writeRetry:
		b.handleWriteRetry(ctx, msg)
	case checkpointDone:
		b.handleCheckpointDone(ctx, msg)
	case admitRetry:
		b.handleAdmitRetry(ctx, msg)
	case messages.Restarted:
		b.restarts, b.lastFailure = msg.Restarts, msg.Reason
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
	if err := b.load(); err != nil {
		b.failStart(ctx, err)
		return
	}
	b.st.HoldEncoded() // conversation.go
	b.log = b.log.With("being", b.st.Identity.Name, "agent_id", b.st.Identity.AgentID)
	b.me = observe.Being{Name: b.st.Identity.Name, ID: b.beingID(), AgentID: b.st.Identity.AgentID}
	props, err := ledger.Props(b.st.Identity.Name, b.opts.Pricing, b.st.Budget)
	if err != nil {
		b.failStart(ctx, err) // a pricing error, already of class configuration
		return
	}
	tools, err := builtin.New(builtin.Env{
		Workspace: b.opts.Workspace,
		Now:       b.opts.clock,
		Funding:   b.opts.Funding,
	})
	if err != nil {
		b.failStart(ctx, supervision.Errorf(supervision.ClassConfiguration, "%w", err))
		return
	}
	b.tools = tools
	pid, err := ctx.SpawnNamed(props, supervision.LedgerChildName)
	if err != nil {
		b.failStart(ctx, supervision.Errorf(supervision.ClassRuntime, "spawn ledger: %w", err))
		return
	}
	b.ledger = pid
	b.startLas(ctx)
}

func (b *Being) failStart(ctx actor.Context, err error) {
	b.log.Error("being cannot start", "err", err)
	b.stopWith(ctx, err)
}

// load reads the being's state: the checkpoint, then the journal
// events after it (docs/state.md#resume-and-recovery). A fresh being
// (Options.Fresh) has no files yet and reads nothing; its first durable
// write is the boot step. Loading writes nothing.
func (b *Being) load() error {
	if b.opts.Fresh != nil {
		st := *b.opts.Fresh
		b.st = &st
		return nil
	}
	store, err := state.Open(b.opts.StateDir)
	if err != nil {
		return err
	}
	store.SetFault(b.opts.StorageFault)
	st, err := store.Load()
	if err != nil {
		return err
	}
	// Nothing is written before the boot step: a torn last line is cut
	// by the first append, and its warning goes with that step.
	journal, err := store.ReopenJournal()
	if err != nil {
		return err
	}
	if cut := journal.Repaired(); cut > 0 {
		b.warn(fmt.Sprintf("activity journal: removed a torn last line of %d bytes", cut))
	}
	archive, err := store.OpenArchive()
	if err != nil {
		journal.Close()
		return err
	}
	b.store, b.st, b.journal, b.archive = store, st, journal, archive
	if err := b.recover(journal.Loaded()); err != nil {
		return err
	}
	b.closeInterruptedCalls()
	return nil
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
	if last := b.journal.NextSeq() - 1; last > from && (len(events) == 0 || events[0].Seq > from+1) {
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
	b.checkpointed = from
	if applied > 0 {
		b.log.Info("caught up with the journal", "events", applied)
	}
	return nil
}

// reconcile is recover for a checkpoint without journal_seq.
func (b *Being) reconcile(events []state.Event) error {
	budget, applied, err := ledger.Recover(b.st.Budget, events, b.opts.Pricing)
	switch {
	case err != nil:
		b.warn("budget not reconciled with the journal: " + err.Error())
	case applied > 0:
		b.st.Budget = budget
		b.warn(fmt.Sprintf("recovered %d money event(s) from the journal after a crash", applied))
	}
	seq := b.journal.NextSeq() - 1
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
	if b.stopTick != nil {
		b.stopTick()
	}
	if b.storage.cancel != nil {
		b.storage.cancel()
	}
	// A write still in flight finishes first (the files' locks).
	if b.journal != nil {
		b.journal.Close()
		b.journal = nil
	}
	if b.archive != nil {
		b.archive.Close()
		b.archive = nil
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
