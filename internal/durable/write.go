package durable

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/wire/chat"
)

// Event is what the engine answers: Committed, Checkpointed, Landed,
// Unavailable, Recovered, Fenced, Created or WordsWritten.
type Event interface{ durableEvent() }

// Committed says a step is durable: the owner applies Events (numbered,
// stamped, the queued warnings first) and goes on with Tag.
type Committed struct {
	Tag    Tag
	Events []state.Event
}

// Checkpointed says a checkpoint is written as far as the owner waits
// for it: the owner keeps only Kept of its conversation and goes on with
// Tag. A background checkpoint's state.json is still being written
// then; its Landed follows.
type Checkpointed struct {
	Tag  Tag
	Kept state.Encoded
}

// Landed says a checkpoint's state.json was written, or (Applied false)
// that it was not the newest or, in the background, failed and is held.
// When Applied the owner's state includes Seq, written at UpdatedAt.
// Background marks the landing of a background checkpoint.
type Landed struct {
	Applied    bool
	Background bool
	Seq        uint64
	UpdatedAt  state.Time
}

// Unavailable says a write failed; it is held and tried again after the
// backoff. Attempts counts the failures since storage last worked.
type Unavailable struct {
	Attempts int
	Err      error
}

// Recovered says storage works again after Attempts failures; their
// warning goes with the next step.
type Recovered struct{ Attempts int }

// Fenced says the fence refused a step (Config.Fence): the step is
// appended but does not count, and the engine writes nothing more. It is
// final: every later verb answers Fenced again without writing, and the
// owner must stop without saving anything (docs/cluster.md#a-fenced-step).
type Fenced struct{ Err error }

// Created says a fresh being's directory was written (Err nil) or not.
type Created struct {
	Tag Tag
	Err error
}

// WordsWritten says the being's last words were written (Err nil) or not
// (LastWords).
type WordsWritten struct {
	Tag Tag
	Err error
}

func (Committed) durableEvent()    {}
func (Checkpointed) durableEvent() {}
func (Landed) durableEvent()       {}
func (Unavailable) durableEvent()  {}
func (Fenced) durableEvent()       {}
func (Recovered) durableEvent()    {}
func (Created) durableEvent()      {}
func (WordsWritten) durableEvent() {}

// Signal is the engine's own message to itself through the owner's
// mailbox: a write's attempt ended, its retry is due, a background
// checkpoint landed, a fresh directory was written. The owner hands it
// to Handle.
type Signal struct {
	e      *Engine
	kind   signalKind
	id     uint64
	cp     *checkpoint
	opened *opened
	tag    Tag
	err    error
}

type signalKind uint8

const (
	writeDone signalKind = iota
	writeRetry
	checkpointDone
	createDone
	wordsDone
)

// write is one durable write in the slot: a journal step or a
// checkpoint. The writer goroutine and the owner take turns on it: the
// owner builds it, the job runs it, the owner reads the outcome after
// the done signal.
type write struct {
	id  uint64
	tag Tag
	// step is the journal step, numbered; lines are its encoding.
	step  []state.Event
	lines []byte
	// checkpoint, when set, is written instead: the archived messages
	// first, then state.json, rotating the journal first when it grew
	// past the segment size. rewrite marks a failed background
	// checkpoint written again.
	checkpoint *checkpoint
	rewrite    bool

	appended bool // the step is committed (a retry skips it)
	fenced   bool // the fence accepted it (a retry skips it)
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
	// background lets the owner go on once the journal's rotation (if
	// due) is done: the same writer goroutine then appends the archive,
	// encodes and writes state.json, and reports it by its signal.
	// generation orders the being's checkpoints in the store
	// (state.Store.WriteCheckpoint); lock, the engine's, is held while
	// one is written, and guards backlog.
	background bool
	generation uint64
	lock       *sync.Mutex
	backlog    *state.Encoded
	// prepareWords makes the last-words file ready once state.json is
	// written (state.Store.PrepareLastWords); wordsErr is why it could
	// not, which does not fail the checkpoint.
	prepareWords bool
	wordsErr     error
}

// Step makes events durable as one step: the queued warnings first,
// each event without a time stamped at, and without a cycle (but
// started) given cycle, every secret redacted (Config.Secrets). Its
// Committed comes when the step is durable, with the events as
// journaled. The first step after Open begins with the stopped event
// of the being's last words, when it has some newer than its journal
// (docs/state.md#last-words).
func (e *Engine) Step(tag Tag, events []state.Event, at state.Time, cycle uint64) []Event {
	var step []state.Event
	if e.words != nil {
		step = append(step, e.words.Event())
		e.words = nil
	}
	step = append(step, e.takeWarnings()...)
	step = append(step, events...)
	for i := range step {
		if step[i].At.IsZero() {
			step[i].At = at
		}
		if step[i].Type != state.EventStarted && step[i].Cycle == 0 {
			step[i].Cycle = cycle
		}
	}
	numbered, lines, err := e.journal.Encode(step)
	if err == nil && e.cfg.Secrets.Mentioned(lines) {
		for i := range step {
			step[i] = redactEvent(step[i], e.cfg.Secrets)
		}
		numbered, lines, err = e.journal.Encode(step)
	}
	if err != nil {
		// Only a bug makes an event unencodable: end like a crash would.
		panic(err)
	}
	return e.submit(&write{tag: tag, step: numbered, lines: lines})
}

// Checkpoint writes snapshot as state.json: archived (the messages that
// left the window) go to conversation.jsonl first; kept is the window
// the snapshot holds. The journal holds every event the checkpoint
// includes before it is written, so a checkpoint that is late, or lost
// to a crash, only makes the next load apply more events.
//
// With background set the owner may go on as soon as the journal's
// rotation (when due) is done, while the archive and state.json are
// written: one background checkpoint is in flight at a time, and none
// while the family's writers have jobs waiting (with every writer busy,
// going on would only queue more work while holding the next request and
// the snapshot both). A snapshot that goes on in the background gets
// slices of its own; one the owner waits for shares the state's, which
// nothing changes meanwhile. It is encoded on the writer, when its turn
// comes, by the engine's encoder under the checkpoint lock.
func (e *Engine) Checkpoint(tag Tag, snapshot state.Being, kept, archived state.Encoded, background bool) []Event {
	seq := e.journal.NextSeq() - 1
	snapshot.JournalSeq = &seq
	background = background && !e.cfg.Inline && e.background == nil && !e.cfg.Writers.Backlogged()
	if background {
		snapshot.OwnSlices()
	}
	encoder, secrets := &e.encoder, e.cfg.Secrets
	cp := &checkpoint{archived: archived, kept: kept, seq: seq, updatedAt: snapshot.UpdatedAt, background: background,
		prepareWords: e.prepareWords && e.words == nil,
		lock:         &e.lock, backlog: &e.backlog, encode: func() ([]byte, error) {
			return encodeRedacted(encoder, &snapshot, secrets)
		}}
	return e.submit(&write{tag: tag, checkpoint: cp, appended: true})
}

// Handle takes one of the engine's signals; signals of another engine
// (an earlier incarnation) or of a closed one are ignored.
func (e *Engine) Handle(s Signal) []Event {
	if s.e != e || e.closed {
		return nil
	}
	switch s.kind {
	case writeDone:
		if w := e.slot; w != nil && w.id == s.id {
			return e.done(w)
		}
	case writeRetry:
		if w := e.slot; w != nil && w.id == s.id {
			e.fault.cancel = nil
			return e.run(w)
		}
	case checkpointDone:
		return e.landed(s.cp, s.err)
	case createDone:
		return e.created(s)
	case wordsDone:
		return e.wordsWritten(s)
	}
	return nil
}

// LastWords writes the being's last words (docs/state.md#last-words):
// the end of its life that storage would not let it journal, its Seq the
// last seq its journal holds. The write runs once on the writer pool,
// beside the slot (nothing is in it: storage failed and the being gave
// up), and is never held; WordsWritten answers. An engine without files
// (a fresh being whose directory was never written), or one fenced,
// writes nothing.
func (e *Engine) LastWords(tag Tag, w state.LastWords) []Event {
	if e.store == nil || e.fenced != nil {
		return []Event{WordsWritten{Tag: tag}}
	}
	w.Seq = e.journal.NextSeq() - 1
	store := e.store
	if e.cfg.Inline {
		return e.wordsWritten(Signal{e: e, kind: wordsDone, tag: tag, err: store.WriteLastWords(w)})
	}
	post := e.cfg.Post
	e.cfg.Writers.Do(func() {
		post(Signal{e: e, kind: wordsDone, tag: tag, err: store.WriteLastWords(w)})
	})
	return nil
}

func (e *Engine) wordsWritten(s Signal) []Event {
	if s.err != nil {
		e.cfg.Log.Error("the being's last words cannot be written: its end is on stderr only", "err", s.err)
	}
	return []Event{WordsWritten{Tag: s.tag, Err: s.err}}
}

// submit puts w in the slot and starts it; a failed background
// checkpoint goes first.
func (e *Engine) submit(w *write) []Event {
	if e.fenced != nil {
		return []Event{Fenced{Err: e.fenced}}
	}
	if e.slot != nil {
		panic("durable: a write is already in the slot")
	}
	if cp := e.held; cp != nil {
		e.held = nil
		e.queued = w
		w = &write{checkpoint: cp, appended: true, rewrite: true}
	}
	e.nextID++
	w.id = e.nextID
	e.slot = w
	return e.run(w)
}

// run starts one attempt of w on the writer pool (or inline).
func (e *Engine) run(w *write) []Event {
	w.attempts++
	if cp := w.checkpoint; cp != nil && cp.generation == 0 {
		cp.generation = w.id
	}
	journal, archive, store, segment := e.journal, e.archive, e.store, e.segmentBytes()
	fence, obs := e.cfg.Fence, e.cfg.Observer
	if e.cfg.Inline {
		w.err = timed(obs, func() error { return w.attempt(fence, journal, archive, store, segment) })
		return e.done(w)
	}
	post, id := e.cfg.Post, w.id
	e.cfg.Writers.Do(func() {
		w.err = timed(obs, func() error { return w.attempt(fence, journal, archive, store, segment) })
		cp := w.checkpoint
		background := w.err == nil && cp != nil && cp.background
		post(Signal{e: e, kind: writeDone, id: id})
		if background {
			// The owner goes on meanwhile; nothing of cp changes but
			// here until its signal. attempt took the lock.
			err := timed(obs, func() error { return cp.write(archive, store) })
			cp.lock.Unlock()
			post(Signal{e: e, kind: checkpointDone, cp: cp, err: err})
		}
	})
	return nil
}

// fenceError marks an error of the fence, which is final: the write is
// not held and tried again like a storage failure.
type fenceError struct{ err error }

func (f fenceError) Error() string { return f.err.Error() }
func (f fenceError) Unwrap() error { return f.err }

// done takes the outcome of w's attempt.
func (e *Engine) done(w *write) []Event {
	var refused fenceError
	if errors.As(w.err, &refused) {
		e.slot, e.queued = nil, nil
		e.fenced = refused.err
		e.cfg.Log.Error("the fence refused a step: this being writes nothing more", "err", refused.err)
		return []Event{Fenced{Err: refused.err}}
	}
	if w.err != nil {
		return e.hold(w)
	}
	e.slot = nil
	var out []Event
	if e.fault.Failing && e.held == nil {
		// A failed background checkpoint still to be written again keeps
		// the failure open: its warning counts that attempt too.
		out = append(out, e.recovered())
	}
	switch cp := w.checkpoint; {
	case w.rewrite:
		out = append(out, e.applied(cp))
		if next := e.queued; next != nil {
			e.queued = nil
			out = append(out, e.submit(next)...)
		}
	case cp != nil && cp.background:
		e.background = cp
		out = append(out, Checkpointed{Tag: w.tag, Kept: cp.kept})
	case cp != nil:
		out = append(out, e.applied(cp), Checkpointed{Tag: w.tag, Kept: cp.kept})
	default:
		out = append(out, Committed{Tag: w.tag, Events: w.step})
	}
	return out
}

// hold logs the failure (once per attempt) and tries again after a
// backoff that doubles from 1 s to 5 min.
func (e *Engine) hold(w *write) []Event {
	e.failed(w.err)
	delay := RetryFirst << min(w.attempts-1, 20)
	if delay > RetryMax || delay <= 0 {
		delay = RetryMax
	}
	post, id := e.cfg.Post, w.id
	e.fault.cancel = e.cfg.AfterFunc(delay, func() {
		if post != nil {
			post(Signal{e: e, kind: writeRetry, id: id})
		}
	})
	return []Event{Unavailable{Attempts: e.fault.Attempts, Err: w.err}}
}

// landed takes the outcome of the background checkpoint. One that
// failed is held like any failed write: it is written again in the slot
// before the next step, with the storage backoff from then on. A stop in
// progress drops it instead: the final save writes a later checkpoint.
func (e *Engine) landed(cp *checkpoint, err error) []Event {
	if cp != e.background {
		return nil
	}
	e.background = nil
	if err == nil {
		l := e.applied(cp)
		l.Background = true
		return []Event{l}
	}
	out := []Event{}
	if !e.stopping && cp.seq > e.checkpointed {
		e.failed(err)
		cp.background = false
		e.held = cp
		out = append(out, Unavailable{Attempts: e.fault.Attempts, Err: err})
	}
	return append(out, Landed{Background: true})
}

// applied records a checkpoint whose state.json is durable. A background
// checkpoint may land after a later one was written in the slot; the
// later one stands.
func (e *Engine) applied(cp *checkpoint) Landed {
	if cp.prepareWords {
		if cp.wordsErr != nil {
			e.cfg.Log.Warn("the last-words file is not ready: the next checkpoint tries again", "err", cp.wordsErr)
		} else {
			e.prepareWords = false
		}
	}
	if cp.seq < e.checkpointed {
		return Landed{}
	}
	e.checkpointed = cp.seq
	return Landed{Applied: true, Seq: cp.seq, UpdatedAt: cp.updatedAt}
}

// failed counts and logs one failed attempt of a durable write.
func (e *Engine) failed(err error) {
	if !e.fault.Failing {
		e.fault = Fault{Failing: true, Since: e.cfg.Now()}
	}
	e.fault.Attempts++
	e.fault.Last = err.Error()
	e.cfg.Log.Warn("storage unavailable: "+err.Error(), "attempt", e.fault.Attempts)
}

// recovered queues, for the next step, one warning standing for every
// failed attempt.
func (e *Engine) recovered() Recovered {
	w := state.Warning(state.Time{}, 0, "storage unavailable: "+e.fault.Last)
	w.Repeats = e.fault.Attempts
	e.warnings = append(e.warnings, w)
	e.cfg.Log.Info("storage available again", "attempts", e.fault.Attempts)
	r := Recovered{Attempts: e.fault.Attempts}
	e.fault = Fault{}
	return r
}

func (e *Engine) takeWarnings() []state.Event {
	w := e.warnings
	e.warnings = nil
	return w
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

// fenceStep asks f to accept step, shown whole when f is a StepFence.
func fenceStep(f Fence, step []state.Event) error {
	if sf, ok := f.(StepFence); ok {
		return sf.FenceStep(step)
	}
	return f.Fence(step[len(step)-1].Seq)
}

// attempt does what is left of w; it runs on a writer goroutine.
func (w *write) attempt(f Fence, j *state.Journal, a *state.Archive, s *state.Store, segment int64) error {
	if !w.appended {
		if err := j.AppendEncoded(w.lines, len(w.step)); err != nil {
			return err
		}
		w.appended = true
	}
	if f != nil && !w.fenced && len(w.step) > 0 {
		if err := fenceStep(f, w.step); err != nil {
			return fenceError{err}
		}
		w.fenced = true
	}
	cp := w.checkpoint
	if cp == nil {
		return nil
	}
	// The being's checkpoints are written one at a time, in order: the
	// archive is appended to in the order of the conversation.
	cp.lock.Lock()
	if cp.background {
		// Only the rotation is ordered against the owner's next steps;
		// the rest is written after the owner is told (run), which
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
// The messages go to the archive through the engine's backlog: a
// background checkpoint whose append failed may be overtaken by the
// next checkpoint (written in the slot while the failed one still held
// the lock), and that one, which no longer carries those messages, must
// append them first, in order, before its state.json drops them.
func (cp *checkpoint) write(a *state.Archive, s *state.Store) error {
	if !cp.archDone {
		*cp.backlog = append(*cp.backlog, cp.archived...)
		cp.archDone = true
	}
	if len(*cp.backlog) > 0 {
		if err := a.AppendEncoded(*cp.backlog); err != nil {
			return err
		}
		*cp.backlog = nil
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
	if cp.prepareWords {
		cp.wordsErr = s.PrepareLastWords(cp.seq)
	}
	return nil
}

// encodeRedacted renders snapshot as state.json with every secret
// redacted. A secret that is part of a value the state cannot do without
// (an amount, a time) leaves that value alone: only the mind's texts are
// redacted then.
func encodeRedacted(encoder *state.EncodeCache, snapshot *state.Being, secrets *boundary.Secrets) ([]byte, error) {
	data, err := encoder.Encode(snapshot)
	if err != nil || !secrets.Mentioned(data) {
		return data, err
	}
	if clean := secrets.RedactJSON(data); decodes(clean) {
		return clean, nil
	}
	texts := *snapshot
	texts.Mind = redactMind(snapshot.Mind, secrets)
	return encoder.Encode(&texts)
}

// decodes reports whether data is a state.json that loads.
func decodes(data []byte) bool {
	_, err := state.Decode(state.StateFile, data)
	return err == nil
}

// redactMind is m with every secret redacted from its texts.
func redactMind(m state.Mind, secrets *boundary.Secrets) state.Mind {
	text := secrets.RedactString
	m.SystemPrompt = text(m.SystemPrompt)
	rules, learnings, memories := make([]string, len(m.Rules)), make([]string, len(m.Learnings)), make([]state.Memory, len(m.Memories))
	for i, r := range m.Rules {
		rules[i] = text(r)
	}
	for i, l := range m.Learnings {
		learnings[i] = text(l)
	}
	for i, mem := range m.Memories {
		mem.Kind, mem.Text = text(mem.Kind), text(mem.Text)
		memories[i] = mem
	}
	m.Rules, m.Learnings, m.Memories = rules, learnings, memories
	return m
}

// redactEvent is ev with every secret replaced by boundary.Redacted in
// each of its texts, nested JSON (a tool call's arguments) included: the
// event goes through its journal line, which it is read back from when
// the line mentions a secret. A secret that is part of a value the line
// cannot do without (an amount, a time: a secret such as "20260101")
// leaves that value alone: only the event's free texts are redacted then.
func redactEvent(ev state.Event, secrets *boundary.Secrets) state.Event {
	line, err := ev.MarshalJSON()
	if err != nil || !secrets.Mentioned(line) {
		return ev // an unencodable event is the journal's to refuse
	}
	var clean state.Event
	if err := clean.UnmarshalJSON(secrets.RedactJSON(line)); err != nil {
		return redactTexts(ev, secrets)
	}
	clean.Seq = ev.Seq
	return clean
}

// redactTexts is ev with every secret redacted from its free texts: a
// warning's message, the texts of the mind, and the content, name and
// tool-call arguments of each chat message.
func redactTexts(ev state.Event, secrets *boundary.Secrets) state.Event {
	text := secrets.RedactString
	message := func(m chat.Message) chat.Message {
		m.Content, m.Name = text(m.Content), text(m.Name)
		calls := make([]chat.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			c.Function.Arguments = string(secrets.RedactJSON([]byte(c.Function.Arguments)))
			calls[i] = c
		}
		if m.ToolCalls != nil {
			m.ToolCalls = calls
		}
		return m
	}
	ev.Message, ev.Text, ev.Source = text(ev.Message), text(ev.Text), text(ev.Source)
	if ev.Chat != nil {
		m := message(*ev.Chat)
		ev.Chat = &m
	}
	if ev.Messages != nil {
		msgs := make([]chat.Message, len(ev.Messages))
		for i, m := range ev.Messages {
			msgs[i] = message(m)
		}
		ev.Messages = msgs
	}
	if ev.Memory != nil {
		m := *ev.Memory
		m.Kind, m.Text = text(m.Kind), text(m.Text)
		ev.Memory = &m
	}
	return ev
}
