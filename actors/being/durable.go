package being

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/state"
)

// The being's durable writes (docs/state.md#the-journal). Every decision
// is a step: its journal events, written with one write and one fsync by
// the family's writer pool, and applied to the being (state.Being.Apply)
// only once that write succeeded. state.json is a checkpoint of the
// applied events, written at cycle ends, at shutdown, and when
// CheckpointEvents events lie past the last one. The being hands the
// pool one write at a time and continues by message, so its mailbox
// never waits on a disk. A write that fails is held and tried again with
// capped backoff; nothing of it takes effect meanwhile
// (docs/cycle.md#storage-faults).

// Storage retry bounds (docs/cycle.md#storage-faults).
const (
	storageRetryFirst = time.Second
	storageRetryMax   = 5 * time.Minute
	// defaultSegmentBytes is the journal size past which a checkpoint
	// starts a new segment.
	defaultSegmentBytes = 64 << 20
	// defaultCheckpointEvents is SINGULARITY_CHECKPOINT_EVENTS' default.
	defaultCheckpointEvents = 256
)

// write is one durable write in progress: a journal step, then (or
// instead) a checkpoint. The writer goroutine and the actor take turns
// on it: the actor builds it, the job runs it, the actor reads the
// outcome after the done message.
type write struct {
	id uint64
	// step is the journal step, numbered; lines are its encoding.
	step  []state.Event
	lines []byte
	// checkpoint, when set, is written after the step: the archived
	// messages first, then state.json (data), rotating the journal
	// first when it grew past the segment size.
	checkpoint *checkpoint
	// then continues once everything is durable and applied.
	then func(ctx actor.Context)

	appended bool // the step is in the journal (a retry skips it)
	attempts int
	err      error // the last attempt's failure
}

type checkpoint struct {
	archived state.Encoded
	kept     state.Encoded
	// encode renders state.json on the writer goroutine; data keeps it
	// for the attempts after the first.
	encode   func() ([]byte, error)
	data     []byte
	seq      uint64
	archDone bool
}

// writeDone is the writer's word that a write's attempt ended.
type writeDone struct {
	epoch uint64
	id    uint64
}

// writeRetry is the backoff timer's word to try a held write again.
type writeRetry struct {
	epoch uint64
	id    uint64
}

// commit makes a step durable and then applies it: the pending warnings
// are written with it, then each event is applied to the state, then
// then runs. A checkpoint follows when enough events piled up.
func (b *Being) commit(ctx actor.Context, events []state.Event, then func(ctx actor.Context)) {
	b.commitAs(ctx, events, waitNothing, then)
}

// commitAs is commit for a step that answers a tool call: held says what
// giving it up (storage failing at shutdown) leaves in flight.
func (b *Being) commitAs(ctx actor.Context, events []state.Event, held waitFor, then func(ctx actor.Context)) {
	b.commitTimed(ctx, events, held, 0, "", then)
}

// commitTimed is commitAs for a completion's or a tool call's step:
// elapsed (and a completion's finish reason) go to the observer with it.
func (b *Being) commitTimed(ctx actor.Context, events []state.Event, held waitFor, elapsed time.Duration, finish string, then func(ctx actor.Context)) {
	if b.cycle != nil {
		b.cycle.held = held
	}
	at := b.opts.now()
	step := append(b.takeWarnings(), events...)
	for i := range step {
		if step[i].At.IsZero() {
			step[i].At = at
		}
		if step[i].Type != state.EventStarted && step[i].Cycle == 0 {
			step[i].Cycle = b.st.Cycle
		}
	}
	numbered, lines, err := b.journal.Encode(step)
	if err != nil {
		// Only a bug makes an event unencodable: end like a crash would.
		panic(err)
	}
	b.submit(ctx, &write{step: numbered, lines: lines, then: func(ctx actor.Context) {
		for _, e := range numbered {
			b.st.Apply(e)
		}
		if o := b.opts.Observer; o != nil {
			o.Step(observe.Step{Being: b.me, Events: numbered, Status: b.st.Status, Balance: b.st.Budget.Remaining, Elapsed: elapsed, Finish: finish})
		}
		if b.eventsSinceCheckpoint() > b.checkpointEvents() && b.phase.inCycle() {
			b.cycle.held = waitNothing // the checkpoint answers no call
			b.writeCheckpoint(ctx, then)
			return
		}
		then(ctx)
	}})
}

// flushWarnings journals the pending warnings as a step of their own
// when no write is in flight; otherwise they go with the next step.
// A running cycle's warnings always wait for its next step, a booting
// being's go with its boot steps, and a being whose boot step is not
// durable writes nothing.
func (b *Being) flushWarnings(ctx actor.Context) {
	if len(b.warnings) == 0 || b.write != nil || !b.booted || b.phase.inCycle() ||
		b.phase == phaseBooting || b.phase == phaseSaving || b.phase == phaseStopped {
		return
	}
	b.commit(ctx, nil, func(actor.Context) {})
}

// writeCheckpoint writes state.json from the applied state: the
// messages that left the window go to conversation.jsonl first, then
// the checkpoint drops them. then runs once it is durable.
func (b *Being) writeCheckpoint(ctx actor.Context, then func(ctx actor.Context)) {
	kept, archived := b.windowed()
	snapshot := b.snapshotWith(kept)
	snapshot.UpdatedAt = b.opts.now()
	seq := b.journal.NextSeq() - 1
	snapshot.JournalSeq = &seq
	// Encoded on the writer, when the write's turn comes: a being waiting
	// for a busy pool holds its state once, not once more encoded. Nothing
	// changes the state before this write is done (the being applies
	// events only after writes, and this one holds the slot), so the
	// snapshot, which shares the state's slices, stays as it was.
	encoder := &b.encoder // the being's own cache, not a copy of it
	cp := &checkpoint{archived: archived, kept: kept, seq: seq, encode: func() ([]byte, error) {
		return encoder.Encode(&snapshot)
	}}
	b.submit(ctx, &write{checkpoint: cp, appended: true, then: func(ctx actor.Context) {
		b.keepWindow(cp.kept)
		b.st.UpdatedAt = snapshot.UpdatedAt
		b.st.JournalSeq = &cp.seq
		b.checkpointed = cp.seq
		then(ctx)
	}})
}

// submit hands w to the writer pool; its done message continues.
func (b *Being) submit(ctx actor.Context, w *write) {
	if b.write != nil {
		panic("being: a durable write is already in flight")
	}
	b.nextWrite++
	w.id = b.nextWrite
	b.write = w
	if b.cycle != nil {
		b.cycle.waiting = waitStorage
	}
	b.run(ctx, w)
}

// run starts one attempt of w on the writer pool.
func (b *Being) run(ctx actor.Context, w *write) {
	w.attempts++
	self, system, epoch := ctx.Self(), ctx.ActorSystem(), b.epoch
	journal, archive, store, segment := b.journal, b.archive, b.store, b.segmentBytes()
	obs := b.opts.Observer
	if b.inline {
		w.err = w.timedAttempt(obs, journal, archive, store, segment)
		b.handleWriteDone(ctx, writeDone{epoch: epoch, id: w.id})
		return
	}
	b.opts.Writers.Do(func() {
		w.err = w.timedAttempt(obs, journal, archive, store, segment)
		system.Root.Send(self, writeDone{epoch: epoch, id: w.id})
	})
}

// timedAttempt is attempt, its duration reported to obs (when not nil).
func (w *write) timedAttempt(obs observe.Observer, j *state.Journal, a *state.Archive, s *state.Store, segment int64) error {
	if obs == nil {
		return w.attempt(j, a, s, segment)
	}
	began := time.Now()
	err := w.attempt(j, a, s, segment)
	obs.DurableWrite(time.Since(began))
	return err
}

// attempt does what is left of w; it runs on a writer goroutine.
func (w *write) attempt(j *state.Journal, a *state.Archive, s *state.Store, segment int64) error {
	if !w.appended {
		if err := j.AppendEncoded(w.lines, len(w.step)); err != nil {
			return err
		}
		w.appended = true
	}
	cp := w.checkpoint
	if cp == nil {
		return nil
	}
	if !cp.archDone {
		if err := a.AppendEncoded(cp.archived); err != nil {
			return err
		}
		cp.archDone = true
	}
	if segment > 0 && j.Size() > segment {
		if err := j.Rotate(); err != nil {
			return err
		}
	}
	if cp.data == nil {
		data, err := cp.encode()
		if err != nil {
			// Only a bug makes the state unencodable; the write is held
			// and its error logged like a storage failure's.
			return fmt.Errorf("cannot encode state: %w", err)
		}
		cp.data = data
	}
	return s.WriteState(cp.data)
}

// handleWriteDone applies a write that succeeded, or holds a failed one
// and schedules its next attempt.
func (b *Being) handleWriteDone(ctx actor.Context, msg writeDone) {
	w := b.write
	if msg.epoch != b.epoch || w == nil || w.id != msg.id {
		return
	}
	if w.err != nil {
		b.holdWrite(ctx, w)
		return
	}
	b.write = nil
	if b.cycle != nil {
		b.cycle.waiting = waitNothing
	}
	if b.storage.failing {
		b.storageRecovered()
	}
	w.then(ctx)
	switch {
	case b.write != nil:
		// then went on with another write.
	case b.stop != nil && !b.phase.inCycle():
		b.continueShutdown(ctx)
	case b.tickDeferred:
		b.tickDeferred = false
		b.startCycle(ctx)
	default:
		b.flushWarnings(ctx)
	}
}

// holdWrite logs the failure (once per attempt) and tries again after a
// backoff that doubles from 1 s to 5 min.
func (b *Being) holdWrite(ctx actor.Context, w *write) {
	if !b.storage.failing {
		b.storage = storageFault{failing: true, since: b.opts.clock()}
	}
	b.storage.attempts++
	b.storage.last = w.err.Error()
	b.log.Warn("storage unavailable: "+w.err.Error(), "attempt", b.storage.attempts)
	delay := storageRetryFirst << min(w.attempts-1, 20)
	if delay > storageRetryMax || delay <= 0 {
		delay = storageRetryMax
	}
	self, system, epoch, id := ctx.Self(), ctx.ActorSystem(), b.epoch, w.id
	b.storage.cancel = b.opts.clockAfter(delay, func() { system.Root.Send(self, writeRetry{epoch: epoch, id: id}) })
	if b.givingUpOnStorage() {
		// A stop that does not wait came while this attempt ran.
		b.giveUpHeld(ctx)
	}
}

// giveUpHeld drops the held write for a stop that does not wait and
// goes on with the shutdown from where the being is.
func (b *Being) giveUpHeld(ctx actor.Context) {
	switch b.phase {
	case phaseCycling, phaseDraining, phaseAbandoning:
		b.phase = phaseDraining
		b.abandonWork(ctx, "shutdown without waiting")
	case phaseSaving:
		b.dropHeldWrite()
		b.stopped(ctx)
	default:
		b.dropHeldWrite()
		b.continueShutdown(ctx)
	}
}

// handleWriteRetry runs the next attempt of the held write.
func (b *Being) handleWriteRetry(ctx actor.Context, msg writeRetry) {
	w := b.write
	if msg.epoch != b.epoch || w == nil || w.id != msg.id {
		return
	}
	b.storage.cancel = nil
	b.run(ctx, w)
}

// dropHeldWrite gives up the write held for storage (a stop that does
// not wait): none of it took effect. It reports whether there was one.
func (b *Being) dropHeldWrite() bool {
	if b.write == nil || !b.storage.failing || b.storage.cancel == nil {
		return false
	}
	b.storage.cancel()
	b.storage.cancel = nil
	b.write = nil
	b.log.Error("a step held for storage was given up", "attempts", b.storage.attempts, "err", b.storage.last)
	return true
}

// storageFault is what the being knows of a storage failure in progress.
type storageFault struct {
	failing  bool
	since    time.Time
	attempts int
	last     string
	cancel   func() bool
}

// storageRecovered journals, with the next step, one warning standing
// for every failed attempt.
func (b *Being) storageRecovered() {
	w := state.Warning(state.Time{}, 0, "storage unavailable: "+b.storage.last)
	w.Repeats = b.storage.attempts
	b.warnings = append(b.warnings, w)
	b.log.Info("storage available again", "attempts", b.storage.attempts)
	b.storage = storageFault{}
}

// warn queues a warning for the journal (with the next step) and logs
// it. A text equal to the last queued one counts as a repeat.
func (b *Being) warn(message string) {
	b.log.Warn(message)
	if n := len(b.warnings); n > 0 && b.warnings[n-1].Message == message {
		b.warnings[n-1].Repeats = max(b.warnings[n-1].Repeats, 1) + 1
		return
	}
	b.warnings = append(b.warnings, state.Warning(state.Time{}, 0, message))
}

// takeWarnings hands over the queued warnings.
func (b *Being) takeWarnings() []state.Event {
	w := b.warnings
	b.warnings = nil
	return w
}

func (b *Being) eventsSinceCheckpoint() uint64 {
	return b.journal.NextSeq() - 1 - b.checkpointed
}

func (b *Being) checkpointEvents() uint64 {
	if b.opts.CheckpointEvents > 0 {
		return uint64(b.opts.CheckpointEvents)
	}
	return defaultCheckpointEvents
}

func (b *Being) segmentBytes() int64 {
	if b.opts.SegmentBytes > 0 {
		return b.opts.SegmentBytes
	}
	return defaultSegmentBytes
}
