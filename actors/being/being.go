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
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/ledger"
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
	catalog  *catalogView

	children []*childRef

	// phase is where the being is in its life (phase.go); cycle is set
	// while a cycle runs, stop from the first stop request on.
	phase phase
	cycle *cycleRun
	stop  *stopping
	// epoch invalidates continuations of work abandoned at shutdown or
	// by a crash.
	epoch uint64
	timer *time.Timer

	tools *builtin.Tools

	restarts    int
	lastFailure string
}

var _ actor.Actor = (*Being)(nil)

// Props returns the props of a being actor with the given options. The
// being supervises its children with supervision.ForBeingChildren: Las
// restarts with capped backoff, child beings restart from their saved
// state, and anything else escalates.
func Props(opts Options) *actor.Props {
	strategy := supervision.ForBeingChildren(supervision.BeingChildrenConfig{})
	return actor.PropsFromProducer(func() actor.Actor { return New(opts) }, actor.WithSupervisor(strategy))
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
		if b.timer != nil {
			b.timer.Stop()
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
	case messages.LasCatalogChanged, messages.LasRestarted, messages.LasSurfaceMissing, messages.LasUnavailable:
		b.handleLasEvent(ctx, msg)
	case messages.Restarted:
		b.restarts, b.lastFailure = msg.Restarts, msg.Reason
	case messages.InjectPanic:
		if b.opts.FaultInjection {
			panic(errors.New("being: injected panic"))
		}
	}
}

// handleStarted loads the state directory, opens the journal, spawns the
// ledger and Las, brings back recorded children and starts living.
func (b *Being) handleStarted(ctx actor.Context) {
	if err := b.load(); err != nil {
		b.failStart(ctx, err)
		return
	}
	b.log = b.log.With("being", b.st.Identity.Name, "agent_id", b.st.Identity.AgentID)
	props, err := ledger.Props(b.st.Identity.Name, b.opts.Pricing, b.st.Budget)
	if err != nil {
		b.failStart(ctx, err) // a pricing error, already of class configuration
		return
	}
	tools, err := builtin.New(builtin.Env{
		Workspace: b.opts.Workspace,
		Now:       b.opts.clock,
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

// load reads the being's state and opens its journal and archive.
func (b *Being) load() error {
	store, err := state.Open(b.opts.StateDir)
	if err != nil {
		return err
	}
	st, err := store.Load()
	if err != nil {
		return err
	}
	at := b.opts.now()
	journal, err := store.OpenJournal(at, st.Cycle)
	if err != nil {
		return err
	}
	archive, err := store.OpenArchive()
	if err != nil {
		journal.Close()
		return err
	}
	b.store, b.st, b.journal, b.archive = store, st, journal, archive
	if err := b.record(state.Started(at)); err != nil {
		return err
	}
	b.closeInterruptedCalls()
	return b.reconcile()
}

// closeInterruptedCalls answers the tool calls of a round that a crash cut
// short: their effect is unknown and they are never replayed (
// docs/las.md#calls-and-deadlines), and without an answer every later request
// would carry tool calls with no results, which OpenAI-compatible servers
// refuse.
func (b *Being) closeInterruptedCalls() {
	conv := b.st.Conversation
	last := len(conv) - 1
	for last >= 0 && conv[last].Role == chat.RoleTool {
		last--
	}
	if last < 0 || conv[last].Role != chat.RoleAssistant || len(conv[last].ToolCalls) == 0 {
		return
	}
	answered := map[string]bool{}
	for _, m := range conv[last+1:] {
		answered[m.ToolCallID] = true
	}
	o := outcome.Unknown("interrupted", "the being stopped before this call finished")
	var closed []chat.Message
	for _, call := range conv[last].ToolCalls {
		if !answered[call.ID] {
			closed = append(closed, chat.Message{Role: chat.RoleTool, ToolCallID: call.ID, Name: call.Function.Name, Content: o.Envelope()})
		}
	}
	if len(closed) > 0 {
		b.appendMessages(closed...)
		b.warn(fmt.Sprintf("closed %d tool call(s) interrupted by the previous stop", len(closed)))
	}
}

// reconcile brings the saved budget up to date with the journal: a crash
// between journaling a cost (or a credit) and the next save leaves the
// journal one money event ahead (docs/money.md#the-invariant). A journal that
// cannot explain the budget (a state from another runtime, an edited file) is
// reported and the saved budget kept.
func (b *Being) reconcile() error {
	events, err := state.ReadJournal(b.store.Path(state.JournalFile))
	if err != nil {
		return err // names the journal and the line
	}
	budget, applied, err := ledger.Recover(b.st.Budget, events, b.opts.Pricing)
	switch {
	case err != nil:
		b.warn("budget not reconciled with the journal: " + err.Error())
		return nil
	case applied == 0:
		return nil
	}
	b.st.Budget = budget
	b.warn(fmt.Sprintf("recovered %d money event(s) from the journal after a crash", applied))
	return b.save()
}

// handleStopping closes the files when the actor stops or restarts
// without a graceful shutdown (a crash, or the parent stopping abruptly).
func (b *Being) handleStopping() {
	b.epoch++
	if b.timer != nil {
		b.timer.Stop()
	}
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

// record appends one event to the journal (fsynced).
func (b *Being) record(e state.Event) error {
	if b.journal == nil {
		return supervision.New(supervision.ClassState, "journal is closed")
	}
	return b.journal.Append(e) // its errors name the journal file
}

// save writes state.json atomically, stamping updated_at.
func (b *Being) save() error {
	b.st.UpdatedAt = b.opts.now()
	return b.store.Save(b.st) // its errors name the state file
}

func (b *Being) warn(message string) {
	if err := b.record(state.Warning(b.opts.now(), b.st.Cycle, message)); err != nil {
		b.log.Error("journal warning failed", "err", err)
	}
	b.log.Warn(message)
}

func (b *Being) String() string {
	if b.st == nil {
		return fmt.Sprintf("being(%s)", b.opts.StateDir)
	}
	return fmt.Sprintf("being(%s)", b.st.Identity.Name)
}
