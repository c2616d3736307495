package being

import (
	"fmt"
	"sync"
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
	encode    func() ([]byte, error)
	data      []byte
	seq       uint64
	updatedAt state.Time
	archDone  bool
	// background lets the being go on once the journal's rotation (if
	// due) is done: the same writer goroutine then appends the archive,
	// encodes and writes state.json, and reports it by checkpointDone.
	// generation orders the being's checkpoints in the store
	// (state.Store.WriteCheckpoint); lock, the being's, is held while
	// one is written.
	background bool
	generation uint64
	lock       *sync.Mutex
	backlog    *archiveBacklog
}

// archiveBacklog is a being's messages that left the window and are not
// in the archive yet; its checkpoint lock guards it.
type archiveBacklog struct {
	messages state.Encoded
}

// checkpointDone is the writer's word that a background checkpoint's
// state.json was written (err nil) or not.
type checkpointDone struct {
	cp  *checkpoint
	err error
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
	b.writeCheckpointAs(ctx, false, then)
}

// writeCheckpointAs is writeCheckpoint; background lets then run as soon
// as the journal's rotation (when due) is done, while the archive and
// state.json are written (handleCheckpointDone takes the outcome). The
// journal holds every event the checkpoint includes before it is
// written, so a checkpoint that is late, or lost to a crash, only makes
// the next load apply more events. One background checkpoint is in
// flight at a time; another one asked meanwhile is written in the write
// slot, after it.
func (b *Being) writeCheckpointAs(ctx actor.Context, background bool, then func(ctx actor.Context)) {
	kept, archived := b.windowed()
	snapshot := b.snapshotWith(kept)
	snapshot.UpdatedAt = b.opts.now()
	seq := b.journal.NextSeq() - 1
	snapshot.JournalSeq = &seq
	// Encoded on the writer, when the write's turn comes: a being waiting
	// for a busy pool holds its state once, not once more encoded. A
	// being that waits in the slot changes nothing meanwhile, so the
	// snapshot shares the state's slices; one that goes on (a background
	// checkpoint) gives the snapshot slices of its own, whose elements and
	// encoded messages are never changed in place. The encoder is the
	// being's own cache, used under the checkpoint lock.
	//
	// When the family's writers have jobs waiting, the being waits for its
	// checkpoint as before: with every writer busy, going on would only
	// queue more work while holding the next round's request and the
	// snapshot both (at 10,000 beings the heap per being went past its
	// target of docs/differences.md#measured-targets).
	background = background && !b.inline && b.background == nil && !b.opts.Writers.Backlogged()
	if background {
		snapshot.OwnSlices()
	}
	encoder := &b.encoder
	cp := &checkpoint{archived: archived, kept: kept, seq: seq, updatedAt: snapshot.UpdatedAt, background: background,
		lock: &b.checkpointLock, backlog: &b.archiveBacklog, encode: func() ([]byte, error) {
			return encoder.Encode(&snapshot)
		}}
	b.submit(ctx, &write{checkpoint: cp, appended: true, then: func(ctx actor.Context) {
		b.keepWindow(cp.kept)
		if cp.background {
			b.background = cp
		} else {
			b.checkpointApplied(cp)
		}
		then(ctx)
	}})
}

// checkpointApplied records a checkpoint whose state.json is durable. A
// background checkpoint may land after a later one was written in the
// slot; the later one stands.
func (b *Being) checkpointApplied(cp *checkpoint) {
	if cp.seq < b.checkpointed {
		return
	}
	b.st.UpdatedAt = cp.updatedAt
	b.st.JournalSeq = &cp.seq
	b.checkpointed = cp.seq
}

// handleCheckpointDone takes the outcome of the background checkpoint.
// One that failed is held like any failed write: it is tried again in
// the write slot before the next step (submit), with the storage
// backoff from then on. A stop in progress drops it instead: the final
// save writes a later checkpoint.
func (b *Being) handleCheckpointDone(ctx actor.Context, msg checkpointDone) {
	if msg.cp != b.background {
		return // a checkpoint of an earlier incarnation
	}
	b.background = nil
	switch {
	case msg.err == nil:
		b.checkpointApplied(msg.cp)
	case b.stop == nil && msg.cp.seq > b.checkpointed:
		b.storageFailed(msg.err)
		msg.cp.background = false
		b.heldCheckpoint = msg.cp
	}
	if b.stopAfterCheckpoint {
		b.stopAfterCheckpoint = false
		b.stopped(ctx)
	}
}

// submit hands w to the writer pool; its done message continues.
func (b *Being) submit(ctx actor.Context, w *write) {
	if b.write != nil {
		panic("being: a durable write is already in flight")
	}
	if cp := b.heldCheckpoint; cp != nil {
		// A background checkpoint that failed goes first.
		b.heldCheckpoint = nil
		next := w
		w = &write{checkpoint: cp, appended: true, then: func(ctx actor.Context) {
			b.checkpointApplied(cp)
			b.submit(ctx, next)
		}}
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
	if cp := w.checkpoint; cp != nil && cp.generation == 0 {
		cp.generation = w.id
	}
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
		cp := w.checkpoint
		background := w.err == nil && cp != nil && cp.background
		system.Root.Send(self, writeDone{epoch: epoch, id: w.id})
		if background {
			// The being goes on meanwhile; nothing of cp changes but here
			// until checkpointDone. attempt took the lock.
			err := timed(obs, func() error { return cp.write(archive, store) })
			cp.lock.Unlock()
			system.Root.Send(self, checkpointDone{cp: cp, err: err})
		}
	})
}

// timed runs do, its duration reported to obs (when not nil).
func timed(obs observe.Observer, do func() error) error {
	if obs == nil {
		return do()
	}
	began := time.Now()
	err := do()
	obs.DurableWrite(time.Since(began))
	return err
}

// timedAttempt is attempt, its duration reported to obs (when not nil).
func (w *write) timedAttempt(obs observe.Observer, j *state.Journal, a *state.Archive, s *state.Store, segment int64) error {
	return timed(obs, func() error { return w.attempt(j, a, s, segment) })
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
	// The being's checkpoints are written one at a time, in order: the
	// archive is appended to in the order of the conversation.
	cp.lock.Lock()
	if cp.background {
		// Only the rotation is ordered against the being's next steps;
		// the rest is written after the being is told (Being.run), which
		// unlocks.
		if err := rotateIfLong(j, segment); err != nil {
			cp.lock.Unlock()
			return err
		}
		return nil
	}
	defer cp.lock.Unlock()
	if err := rotateIfLong(j, segment); err != nil {
		return err
	}
	return cp.write(a, s)
}

// rotateIfLong starts a new journal segment when the current one grew
// past segment bytes (0: never). It is called only for a checkpoint
// that includes every event so far.
func rotateIfLong(j *state.Journal, segment int64) error {
	if segment > 0 && j.Size() > segment {
		return j.Rotate()
	}
	return nil
}

// write does what is left of the checkpoint: the archived messages,
// then state.json. The caller holds cp.lock.
//
// The messages go to the archive through the being's backlog: a
// background checkpoint whose append failed may be overtaken by the
// next checkpoint (written in the slot while the failed one still held
// the lock), and that one, which no longer carries those messages, must
// append them first, in order, before its state.json drops them.
func (cp *checkpoint) write(a *state.Archive, s *state.Store) error {
	if !cp.archDone {
		cp.backlog.messages = append(cp.backlog.messages, cp.archived...)
		cp.archDone = true
	}
	if len(cp.backlog.messages) > 0 {
		if err := a.AppendEncoded(cp.backlog.messages); err != nil {
			return err
		}
		cp.backlog.messages = nil
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
	if err := s.WriteCheckpoint(cp.data, cp.generation); err != nil {
		return err
	}
	cp.data = nil // the next checkpoint encodes its own
	return nil
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
	if b.storage.failing && b.heldCheckpoint == nil {
		// A failed background checkpoint still to be written again keeps
		// the failure open: its warning counts that attempt too.
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
	b.storageFailed(w.err)
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

// storageFailed counts and logs one failed attempt of a durable write.
func (b *Being) storageFailed(err error) {
	if !b.storage.failing {
		b.storage = storageFault{failing: true, since: b.opts.clock()}
	}
	b.storage.attempts++
	b.storage.last = err.Error()
	b.log.Warn("storage unavailable: "+err.Error(), "attempt", b.storage.attempts)
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
