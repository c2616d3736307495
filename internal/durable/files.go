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
func Open(dir string, cfg Config) (*Engine, *state.Being, error) {
	store, err := state.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	store.SetFault(cfg.Fault)
	st, err := store.Load()
	if err != nil {
		return nil, nil, err
	}
	journal, err := store.ReopenJournal()
	if err != nil {
		return nil, nil, err
	}
	e := New(cfg)
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

// opened is a fresh being's state directory, once written.
type opened struct {
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
		e.install(s.opened.store, s.opened.journal, s.opened.archive)
	}
	return []Event{Created{Tag: s.tag, Err: s.err}}
}

// create writes a fresh being's directory; it runs on a writer goroutine.
func create(dir string, fresh *state.Being, fault state.Fault) (*opened, error) {
	store, err := state.Open(dir)
	if err != nil {
		return nil, err
	}
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
	return &opened{store: store, journal: journal, archive: archive}, nil
}
