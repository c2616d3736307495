package durable

import (
	"fmt"

	"github.com/wisent/singularity/internal/store/state"
)

// Open loads the being in dir: its checkpoint, with the journal reopened
// for appending and the archive opened (docs/state.md#resume-and-recovery).
// Loading writes nothing: a torn last line of the journal is cut by the
// first append, and its warning is queued for that step. The events the
// journal holds are Loaded. The being's last words newer than its
// journal (docs/state.md#last-words) are journaled first in its first
// step.
//
// The engine holds dir's lock (state.LockDir) until Close: it is taken
// before anything else, so a directory another runtime lives in is
// refused before it is touched.
func Open(dir string, cfg Config) (e *Engine, st *state.Being, err error) {
	lock, err := state.LockDir(dir)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			lock.Unlock()
		}
	}()
	store, err := state.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	store.RemoveLeftovers() // under the lock
	store.SetFault(cfg.Fault)
	st, err = store.Load()
	if err != nil {
		return nil, nil, err
	}
	journal, err := store.ReopenJournal()
	if err != nil {
		return nil, nil, err
	}
	e = New(cfg)
	e.dirLock = lock
	if cut := journal.Repaired(); cut > 0 {
		message := fmt.Sprintf("activity journal: removed a torn last line of %d bytes", cut)
		e.cfg.Log.Warn(message)
		e.Warn(message)
	}
	archive, err := store.OpenArchive()
	if err != nil {
		journal.Close()
		return nil, nil, err
	}
	e.install(store, journal, archive)
	e.readLastWords(dir)
	return e, st, nil
}

// readLastWords takes the being's last words (docs/state.md#last-words)
// when they are newer than its journal: its first step journals them.
// The first checkpoint empties them, and makes the file where it is
// missing. Words that cannot be read are left for that checkpoint too.
func (e *Engine) readLastWords(dir string) {
	e.prepareWords = true
	words, err := state.ReadLastWords(dir)
	if err != nil {
		e.cfg.Log.Warn("the being's last words cannot be read: they are left out", "err", err)
		return
	}
	if words.Newer(e.journal.NextSeq() - 1) {
		e.words = words
	}
}

// Loaded is the journal's events as read by Open (by OpenHeld: the
// trusted events past its checkpoint).
func (e *Engine) Loaded() []state.Event {
	if e.loaded != nil {
		loaded := e.loaded
		e.loaded = nil
		return loaded
	}
	return e.journal.Loaded()
}

// opened is a fresh being's state directory, once written, and its lock.
type opened struct {
	lock    *state.DirLock
	store   *state.Store
	journal *state.Journal
	archive *state.Archive
}

// Create writes a fresh being's directory and first state.json from
// fresh (which the caller no longer changes) on the writer pool, and
// opens its journal and archive; Created answers.
func (e *Engine) Create(tag Tag, dir string, fresh *state.Being) []Event {
	fault := e.cfg.Fault
	if e.cfg.Inline {
		o, err := create(dir, fresh, fault)
		return e.created(Signal{e: e, kind: createDone, opened: o, tag: tag, err: err})
	}
	post := e.cfg.Post
	e.cfg.Writers.Do(func() {
		o, err := create(dir, fresh, fault)
		post(Signal{e: e, kind: createDone, opened: o, tag: tag, err: err})
	})
	return nil
}

func (e *Engine) created(s Signal) []Event {
	if s.err == nil {
		if e.closed {
			// The owner ended meanwhile: nothing will write here.
			s.opened.close()
			return nil
		}
		e.dirLock = s.opened.lock
		e.install(s.opened.store, s.opened.journal, s.opened.archive)
		e.prepareWords = true
	}
	return []Event{Created{Tag: s.tag, Err: s.err}}
}

func (o *opened) close() {
	o.journal.Close()
	o.archive.Close()
	o.lock.Unlock()
}

// create writes a fresh being's directory, locked before anything in it
// is touched (state.OpenLocked: a runtime that made the same directory a
// moment before holds it, and may be saving its first state.json); it
// runs on a writer goroutine.
func create(dir string, fresh *state.Being, fault state.Fault) (o *opened, err error) {
	store, lock, err := state.OpenLocked(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Unlock()
		}
	}()
	store.SetFault(fault)
	if fault != nil {
		if err := fault(state.StateFile); err != nil {
			return nil, err
		}
	}
	if err := store.Create(fresh); err != nil {
		return nil, err
	}
	journal, err := store.OpenJournal(fresh.StartedAt, 0)
	if err != nil {
		return nil, err
	}
	archive, err := store.OpenArchive()
	if err != nil {
		journal.Close()
		return nil, err
	}
	return &opened{lock: lock, store: store, journal: journal, archive: archive}, nil
}

// Held is what a new holder of a clustered being loads
// (docs/cluster.md#the-next-holder): fence.Recover reads it from the
// files of every earlier holder and the being's commit record.
type Held struct {
	// Token is the new holder's fencing token: its files are written in
	// state.HolderDir(dir, Token).
	Token uint64
	// Checkpoint is the newest trusted checkpoint, Events the trusted
	// events after it, in order; Next is the seq of the next event.
	Checkpoint *state.Being
	Events     []state.Event
	Next       uint64
	// Untrusted counts the events of earlier holders that were written
	// but never committed, and are left out.
	Untrusted int
}

// OpenHeld opens the files of a new holder of the clustered being in dir
// (docs/cluster.md#the-holders-files): held.Checkpoint is the state, and
// held.Events are Loaded. The holder's directory must hold no state.json
// and no event yet (a token is never reused; an earlier attempt of the
// same holder may have made it); it is made, with an empty journal
// numbered from held.Next, and locked until Close. Nothing of the earlier holders is
// written, and nothing is written here but the empty files.
func OpenHeld(dir string, held Held, cfg Config) (e *Engine, st *state.Being, err error) {
	if held.Token == 0 || held.Checkpoint == nil || held.Next == 0 {
		return nil, nil, fmt.Errorf("durable: a holder needs a token, a checkpoint and a next seq")
	}
	own := state.HolderDir(dir, held.Token)
	store, lock, err := state.OpenLocked(own)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			lock.Unlock()
		}
	}()
	store.SetFault(cfg.Fault)
	switch written, err := state.Exists(own); {
	case err != nil:
		return nil, nil, err
	case written:
		return nil, nil, fmt.Errorf("state: holder directory %s is not new", own)
	}
	journal, err := store.ReopenJournal()
	if err != nil {
		return nil, nil, err
	}
	if err := journal.StartAt(held.Next); err != nil {
		journal.Close()
		return nil, nil, err
	}
	archive, err := store.OpenArchive()
	if err != nil {
		journal.Close()
		return nil, nil, err
	}
	e = New(cfg)
	e.dirLock = lock
	e.install(store, journal, archive)
	e.loaded = held.Events
	st = held.Checkpoint
	return e, st, nil
}
