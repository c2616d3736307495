// Package durable is a being's durable-step engine
// (docs/state.md#the-journal). It owns the being's state directory while
// the being lives: the store, the journal, the archive, the write slot,
// the storage backoff, the checkpoint encoder with its background writer,
// and the archive backlog.
//
// Its owner, the being actor, has two verbs: Step makes a step of journal
// events durable, and Checkpoint writes state.json from a snapshot. One
// write is in the slot at a time; the family's writer pool runs it, so
// the owner's mailbox never waits on a disk. The engine answers with
// typed events (Committed, Checkpointed, Unavailable, Landed): from the
// verbs themselves when a write ran inline, and from Handle, which takes
// the engine's own Signal messages as they reach the owner's mailbox.
// Nothing of a step takes effect before Committed: the owner applies the
// events then. A write that fails is held and tried again with a backoff
// that doubles from 1 s to 5 min (docs/cycle.md#storage-faults).
//
// The commit of a step is a local append and fsync of the journal. A
// family across machines adds a Fence (internal/fence): the step then
// counts only once the fence accepted it too.
package durable

import (
	"log/slog"
	"sync"
	"time"

	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
)

// Storage retry bounds (docs/cycle.md#storage-faults).
const (
	RetryFirst = time.Second
	RetryMax   = 5 * time.Minute
	// DefaultSegmentBytes is the journal size past which a checkpoint
	// starts a new segment.
	DefaultSegmentBytes = 64 << 20
	// DefaultCheckpointEvents is SINGULARITY_CHECKPOINT_EVENTS' default.
	DefaultCheckpointEvents = 256
)

// Tag is the owner's word for what follows a write. The engine never
// reads it: it hands it back with the write's Committed or Checkpointed.
type Tag uint32

// Fence makes a committed step count in a family across machines
// (internal/fence): the engine asks it once the journal has the step
// appended and fsynced, with last the seq of the step's last event, and
// answers Committed only when it returns nil. A step of no events is not
// fenced. An error is final (the fence lost its lock, or cannot tell
// whether the step was accepted): the step stays appended but does not
// count, the engine answers Fenced, and it writes nothing more, neither
// steps nor checkpoints.
type Fence interface {
	Fence(last uint64) error
}

// StepFence is a Fence that is shown the whole step, not only its last
// seq: a family whose beings are spread over members registers a child
// in the commit of the step that records it (docs/cluster.md#placement).
// The engine calls FenceStep instead of Fence when the fence has it.
type StepFence interface {
	Fence
	FenceStep(step []state.Event) error
}

// Config is what an engine needs from its owner.
type Config struct {
	// Writers is the family's pool for durable writes; nil runs each
	// write on a goroutine of its own.
	Writers *state.Writers
	// Inline runs every write on the caller's goroutine, its events
	// returned by the verb (tests that drive the owner handler by
	// handler).
	Inline bool
	// Post delivers a Signal to the owner's mailbox.
	Post func(Signal)
	// AfterFunc runs f after d, returning its cancel (the storage
	// backoff's clock).
	AfterFunc func(d time.Duration, f func()) (cancel func() bool)
	// Now is the clock of the storage fault's start.
	Now func() time.Time
	// Fault, when set (tests), is asked before every durable write.
	Fault state.Fault
	// CheckpointEvents: a checkpoint is due when more events than this
	// lie past the last one; zero means DefaultCheckpointEvents.
	CheckpointEvents int
	// SegmentBytes: a checkpoint starts a new journal segment past this
	// size; zero means DefaultSegmentBytes.
	SegmentBytes int64
	// Fence, when set, must accept every committed step before it
	// counts; nil (a single process) means none.
	Fence Fence
	// Secrets are redacted from every event of a step before it is
	// journaled (so the events applied hold no secret either) and from
	// every checkpoint (docs/configuration.md#secret-files); nil redacts
	// nothing.
	Secrets  *boundary.Secrets
	Observer observe.Observer
	Log      *slog.Logger
}

// Engine is one being's durable-step engine; the owner's goroutine (its
// mailbox) calls every method. Make it with Open or New.
type Engine struct {
	cfg Config
	// dirLock is the state directory's (state.LockDir), held until Close.
	dirLock *state.DirLock
	store   *state.Store
	journal *state.Journal
	archive *state.Archive

	// slot is the write in flight or held for storage; queued waits for
	// it (a step behind a failed background checkpoint written again).
	slot, queued *write
	nextID       uint64
	fault        Fault
	warnings     []state.Event
	checkpointed uint64 // the seq the last applied checkpoint includes
	// background is the checkpoint whose state.json is being written
	// while the owner goes on; held is one that failed, written again
	// before the next step.
	background, held *checkpoint
	encoder          state.EncodeCache
	// lock is held while a checkpoint is written; it guards backlog,
	// the messages that left the window and are not archived yet.
	lock     sync.Mutex
	backlog  state.Encoded
	stopping bool
	closed   bool
	// loaded is OpenHeld's trusted events, until Loaded takes them.
	loaded []state.Event
	// fenced is the fence's refusal, once one came: nothing is written
	// after it.
	fenced error
	// words are the being's last words read at Open, until its first
	// step journals them; prepareWords asks the next checkpoint to make
	// the last-words file ready (state.Store.PrepareLastWords).
	words        *state.LastWords
	prepareWords bool
}

// Fault is what the engine knows of a storage failure in progress.
type Fault struct {
	Failing  bool
	Since    time.Time
	Attempts int
	Last     string
	cancel   func() bool
}

// New returns an engine without files yet: a fresh being's, whose
// directory Create writes.
func New(cfg Config) *Engine {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AfterFunc == nil {
		cfg.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return &Engine{cfg: cfg}
}

// Opened reports whether the engine has the being's files (Open, or a
// Create that landed).
func (e *Engine) Opened() bool { return e.journal != nil }

func (e *Engine) install(store *state.Store, journal *state.Journal, archive *state.Archive) {
	e.store, e.journal, e.archive = store, journal, archive
}

// SetLogger makes log the engine's logger (the owner's, once it knows
// its name).
func (e *Engine) SetLogger(log *slog.Logger) { e.cfg.Log = log }

// NextSeq is the seq the next journaled event gets.
func (e *Engine) NextSeq() uint64 { return e.journal.NextSeq() }

// SetCheckpointed records the seq the loaded checkpoint includes.
func (e *Engine) SetCheckpointed(seq uint64) { e.checkpointed = seq }

// CheckpointDue reports whether more events than the configured count
// lie past the last checkpoint.
func (e *Engine) CheckpointDue() bool {
	limit := uint64(DefaultCheckpointEvents)
	if e.cfg.CheckpointEvents > 0 {
		limit = uint64(e.cfg.CheckpointEvents)
	}
	return e.journal.NextSeq()-1-e.checkpointed > limit
}

// Busy reports whether a write is in the slot (in flight or held).
func (e *Engine) Busy() bool { return e.slot != nil }

// Writing reports whether a background checkpoint is still being
// written.
func (e *Engine) Writing() bool { return e.background != nil }

// Fenced is the fence's refusal once one came (nil before): the engine
// writes nothing more.
func (e *Engine) Fenced() error { return e.fenced }

// Storage is the storage failure in progress (Failing false when none).
func (e *Engine) Storage() Fault { return e.fault }

// Warn queues a warning for the journal: it goes with the next step. A
// text equal to the last queued one counts as a repeat.
func (e *Engine) Warn(message string) {
	if n := len(e.warnings); n > 0 && e.warnings[n-1].Message == message {
		e.warnings[n-1].Repeats = max(e.warnings[n-1].Repeats, 1) + 1
		return
	}
	e.warnings = append(e.warnings, state.Warning(state.Time{}, 0, message))
}

// Warnings reports whether warnings wait for a step.
func (e *Engine) Warnings() bool { return len(e.warnings) > 0 }

// Stopping tells the engine its owner is shutting down: a background
// checkpoint that fails from now on is dropped, not held (the final save
// writes a later one).
func (e *Engine) Stopping() { e.stopping = true }

// Living tells the engine that its owner lives on after a shutdown that
// did not end it (a being that rests dormant once its life ended): a
// background checkpoint that fails is held again.
func (e *Engine) Living() { e.stopping = false }

// Cancel stops the storage backoff's timer (a crash, a shutdown).
func (e *Engine) Cancel() {
	if e.fault.cancel != nil {
		e.fault.cancel()
		e.fault.cancel = nil
	}
}

// Close ends the engine: the backoff is cancelled, signals still on their
// way are ignored, the files are closed (a write in flight finishes
// first: the files' locks) and the directory's lock is let go.
func (e *Engine) Close() {
	e.Cancel()
	e.closed = true
	if e.journal != nil {
		e.journal.Close()
		e.journal = nil
	}
	if e.archive != nil {
		e.archive.Close()
		e.archive = nil
	}
	e.dirLock.Unlock()
	e.dirLock = nil
}

// DropHeld gives up the write held for storage (a stop that does not
// wait): none of it took effect. It reports whether there was one.
func (e *Engine) DropHeld() bool {
	if e.slot == nil || !e.fault.Failing || e.fault.cancel == nil {
		return false
	}
	e.Cancel()
	e.slot, e.queued = nil, nil
	e.cfg.Log.Error("a step held for storage was given up", "attempts", e.fault.Attempts, "err", e.fault.Last)
	return true
}

func (e *Engine) segmentBytes() int64 {
	if e.cfg.SegmentBytes > 0 {
		return e.cfg.SegmentBytes
	}
	return DefaultSegmentBytes
}
