package control

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
)

// Apply carries req out on the being living in dir when no runtime holds
// it: it takes the directory's lock (state.ErrInUse when a runtime holds
// it after all), reads the being's state caught up with its journal,
// journals the event Decide gives as one durable step with a checkpoint
// after it, and answers. A refused request, and a key or message id seen
// before, write nothing.
func Apply(dir string, req Request, secrets *boundary.Secrets, now func() state.Time) (Reply, error) {
	return ApplyWith(func(cfg durable.Config) (*durable.Engine, *state.Being, error) { return durable.Open(dir, cfg) },
		dir, req, secrets, now)
}

// Opener opens a being's durable engine with cfg: durable.Open for a
// being of one process, durable.OpenHeld with the fence of its lock for
// a being of a family across members.
type Opener func(cfg durable.Config) (*durable.Engine, *state.Being, error)

// ApplyWith is Apply with the being's engine opened by open.
func ApplyWith(open Opener, dir string, req Request, secrets *boundary.Secrets, now func() state.Time) (Reply, error) {
	if err := req.Check(); err != nil {
		return Reply{}, err
	}
	engine, st, err := open(durable.Config{
		Inline: true, Secrets: secrets, Log: slog.New(slog.DiscardHandler), Now: time.Now,
		// A write the storage refuses is not tried again: the command
		// says so and ends.
		AfterFunc: func(time.Duration, func()) func() bool { return func() bool { return true } },
	})
	if err != nil {
		return Reply{}, err
	}
	defer engine.Close()
	if err := catchUp(dir, st, engine.Loaded()); err != nil {
		return Reply{}, err
	}
	e, err := Decide(st, req, now())
	if err != nil || e == nil {
		return Answer(st, req, true), err
	}
	if err := durableStep(engine.Step(0, []state.Event{*e}, now(), st.Cycle), st); err != nil {
		return Reply{}, err
	}
	engine.SetCheckpointed(st.Seq())
	st.HoldEncoded()
	snapshot := *st
	snapshot.UpdatedAt = now()
	// The step is durable already: a checkpoint that fails only makes
	// the next load apply one more event.
	_ = durableStep(engine.Checkpoint(0, snapshot, st.Encoded, nil, false), nil)
	return Answer(st, req, false), nil
}

// catchUp applies to st every journal event past its checkpoint
// (docs/state.md#resume-and-recovery).
func catchUp(dir string, st *state.Being, loaded []state.Event) error {
	from := st.Seq()
	events := loaded
	if len(events) == 0 || events[0].Seq > from+1 {
		all, err := state.ReadAll(dir)
		if err != nil {
			return err
		}
		events = all
	}
	for _, e := range events {
		if e.Seq > from {
			st.Apply(e)
		}
	}
	if st.JournalSeq == nil && len(events) > 0 {
		last := events[len(events)-1].Seq
		st.JournalSeq = &last
	}
	return nil
}

// errNotDurable is a write the storage refused: nothing of it counts.
var errNotDurable = errors.New("not durable")

// durableStep applies the committed events of an inline write to st
// (when st is set), or says why the write did not land.
func durableStep(events []durable.Event, st *state.Being) error {
	for _, ev := range events {
		switch ev := ev.(type) {
		case durable.Committed:
			if st != nil {
				for _, e := range ev.Events {
					st.Apply(e)
				}
			}
			return nil
		case durable.Checkpointed:
			return nil
		case durable.Unavailable:
			return fmt.Errorf("%w: storage refused the write: %v", errNotDurable, ev.Err)
		case durable.Fenced:
			return fmt.Errorf("%w: %w", errNotDurable, ev.Err)
		}
	}
	return errNotDurable
}
