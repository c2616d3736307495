package durable

import (
	"fmt"

	"github.com/wisent/singularity/internal/store/state"
)

// Open loads the being in dir: its checkpoint, with the journal reopened
// for appending and the archive opened (docs/state.md#resume-and-recovery).
// Loading writes nothing: a torn last line of the journal is cut by the
// first append, and its warning is queued for that step. The events the
// journal holds are Loaded.
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
	return e, st, nil
}

// Loaded is the journal's events as read by Open.
func (e *Engine) Loaded() []state.Event { return e.journal.Loaded() }

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
	}
	return []Event{Created{Tag: s.tag, Err: s.err}}
}

func (o *opened) close() {
	o.journal.Close()
	o.archive.Close()
	o.lock.Unlock()
}

// create writes a fresh being's directory, locked first (a runtime that
// made the same directory a moment before holds it); it runs on a writer
// goroutine.
func create(dir string, fresh *state.Being, fault state.Fault) (o *opened, err error) {
	store, err := state.Open(dir)
	if err != nil {
		return nil, err
	}
	lock, err := state.LockDir(dir)
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
