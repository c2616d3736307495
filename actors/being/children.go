package being

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/prompt"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
)

// childRef is a child being as its parent knows it.
type childRef struct {
	id   string
	name string
	pid  *actor.PID // nil until started (once creates without starting)
	done bool       // its BeingStopped arrived, or its actor ended
}

// alive reports whether the child's actor runs and has not stopped yet.
func (r *childRef) alive() bool { return r.pid != nil && !r.done }

// childActorName is the stable actor name of a child being, so actor ids
// read as a path: family/being-Ada/being-Bo-1a2b3c4d.
func childActorName(name, id string) string {
	short := id
	if len(short) > 8 {
		short = short[:8]
	}
	return supervision.ChildBeingPrefix + sanitizeName(name) + "-" + short
}

func sanitizeName(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(out) < 32; i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return "child"
	}
	return string(out)
}

// spawnChild carries out the spawn tool's effect
// (docs/family.md#spawning, docs/money.md#funded-children). A funded
// child's endowment is granted first, as a step of its own: only once
// the grant is durable (and the ledger has taken it) is the child's
// state directory written, with the endowment as its starting balance.
// A minted child gets the configured starting balance. The call's result
// then records the child in the mind; only once that step is durable
// does the child actor start — except in once mode, where the child
// waits for the next `run --resume`. A crash between the steps is
// repaired at the next start (completeGrants, removeUngranted).
func (b *Being) spawnChild(ctx actor.Context, spawn builtin.Spawn, done func(toolResult)) {
	req := spawn.Child
	dir := filepath.Join(b.opts.StateDir, "children", req.ID)
	if req.Endowment.Sign() <= 0 {
		b.createChild(ctx, spawn, dir, b.opts.StartingBalance, done)
		return
	}
	grant := state.EndowmentGranted(spawn.Record(dir), req.Endowment)
	b.commitAs(ctx, []state.Event{grant}, waitChild, func(ctx actor.Context) {
		ctx.Send(b.ledger, messages.EndowmentGranted{Amount: req.Endowment})
		b.cycle.waiting = waitChild
		b.createChild(ctx, spawn, dir, req.Endowment, done)
	})
}

// createChild writes the child's state directory with its starting
// balance on the writer pool, then finishes the spawn call.
func (b *Being) createChild(ctx actor.Context, spawn builtin.Spawn, dir string, balance money.Amount, done func(toolResult)) {
	req := spawn.Child
	opts := b.opts.child(dir, req.Name, req.Ticker, req.Specialty)
	fresh := NewState(opts.Identity, balance, opts.Model, opts.now())
	actorName := childActorName(req.Name, req.ID)
	started := builtin.ChildStarted{Actor: ctx.Self().Id + "/" + actorName, StateDir: dir}
	if b.opts.Mode == Once {
		started.Status = state.StatusStarting
	}
	parent, fault := b.opts.StateDir, b.opts.StorageFault
	b.onWriter(ctx, func() error {
		return ensureChild(parent, dir, opts.Identity, fresh, fault)
	}, func(err error) {
		res := spawn.Finish(started, err)
		r := toolResult{outcome: res.Outcome, changes: res.Changes}
		if err == nil {
			r.after = func(ctx actor.Context) { b.startChild(ctx, req.ID, req.Name, opts, actorName) }
		}
		done(r)
	})
}

// ensureChild makes dir hold the child's first state: written from
// fresh when no state.json is there (a directory left half-made by a
// crash is completed), kept when a loadable one is (a grant completed
// after a crash that came after the child's state was written).
func ensureChild(parent, dir string, id state.Identity, fresh *state.Being, fault state.Fault) error {
	if exists, err := state.Exists(dir); err == nil && exists {
		if _, err := state.Load(dir); err != nil {
			return fmt.Errorf("%w: %w", builtin.ErrChildState, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Join(parent, "children"), state.DirMode); err != nil {
		return fmt.Errorf("%w: %w", builtin.ErrChildState, err)
	}
	if _, _, _, err := bootChild(dir, id, fresh, fault); err != nil {
		return fmt.Errorf("%w: %w", builtin.ErrChildState, err)
	}
	return nil
}

// completeGrants finishes, exactly once, every grant whose child is not
// recorded (docs/money.md#funded-children): a crash came between the
// grant and the spawn call's result. The child is created from the grant
// when its state is missing, then recorded in the mind; its actor starts
// with the other recorded children. A child that cannot be created is a
// warning, and its grant is tried again at the next start.
func (b *Being) completeGrants(ctx actor.Context, pending []state.Grant, then func(ctx actor.Context)) {
	if len(pending) == 0 {
		then(ctx)
		return
	}
	g, rest := pending[0], pending[1:]
	rec := g.Child
	dir := filepath.Join(b.opts.StateDir, "children", rec.ID)
	opts := b.opts.child(dir, rec.Name, rec.Ticker, rec.Specialty)
	fresh := NewState(opts.Identity, g.Amount, opts.Model, rec.CreatedAt)
	parent, fault := b.opts.StateDir, b.opts.StorageFault
	b.onWriter(ctx, func() error {
		return ensureChild(parent, dir, opts.Identity, fresh, fault)
	}, func(err error) {
		if err != nil {
			b.warn("child " + rec.Name + " of a grant cannot be created yet: " + err.Error())
			b.completeGrants(ctx, rest, then)
			return
		}
		rec.StateDir = dir
		rec.Status = state.StatusRunning
		if b.opts.Mode == Once {
			rec.Status = state.StatusStarting
		}
		b.warn("completed the grant of child " + rec.ID + " interrupted by the previous stop")
		b.commit(ctx, []state.Event{state.ChildAdded(rec)}, func(ctx actor.Context) {
			b.completeGrants(ctx, rest, then)
		})
	})
}

// removeUngranted removes every directory under children/ that neither
// a grant nor a child record accounts for (docs/money.md#funded-children):
// a spawn that crashed before its step was durable left it, and no child
// ever lived there. Each removal is a warning.
func (b *Being) removeUngranted(ctx actor.Context, then func(ctx actor.Context)) {
	// The records as they stand now, copied for the writer's job.
	st := state.Being{Mind: state.Mind{Children: slices.Clone(b.st.Mind.Children)}, Grants: slices.Clone(b.st.Grants)}
	root := filepath.Join(b.opts.StateDir, "children")
	var removed []string
	b.onWriter(ctx, func() error {
		entries, err := os.ReadDir(root)
		if err != nil {
			return nil // no children/ yet
		}
		var dirs []string
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, e.Name())
			}
		}
		for _, name := range st.Ungranted(dirs) {
			if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
				return err
			}
			removed = append(removed, name)
		}
		if len(removed) > 0 {
			return state.SyncDir(root)
		}
		return nil
	}, func(err error) {
		for _, id := range removed {
			b.warn("removed child directory " + id + " without a grant")
		}
		if err != nil {
			b.warn("child directories without a grant not removed: " + err.Error())
		}
		then(ctx)
	})
}

// bootChild writes a spawned child's first state.json.
func bootChild(dir string, id state.Identity, fresh *state.Being, fault state.Fault) (*state.Store, *state.Being, bool, error) {
	if fault != nil {
		if err := fault(state.StateFile); err != nil {
			return nil, nil, false, err
		}
	}
	return state.Boot(dir, false, id, func() (*state.Being, error) { return fresh, nil })
}

// startChild starts a spawned child's actor once its record is durable
// (in once mode it only records it).
func (b *Being) startChild(ctx actor.Context, id, name string, opts Options, actorName string) {
	ref := &childRef{id: id, name: name}
	b.children = append(b.children, ref)
	if b.opts.Mode == Once {
		return
	}
	opts.Mode = Run
	pid, err := ctx.SpawnNamed(Props(opts), actorName)
	if err != nil {
		b.warn("child " + name + " cannot be started: " + err.Error())
		ref.done = true
		return
	}
	ref.pid = pid
}

// onWriter runs work on the family's writer pool and continues with its
// error on the mailbox; continuations of an incarnation that ended are
// dropped.
func (b *Being) onWriter(ctx actor.Context, work func() error, cont func(error)) {
	if b.inline {
		cont(work())
		return
	}
	epoch := b.epoch
	system := ctx.ActorSystem()
	future := actor.NewFuture(system, fileTimeout)
	b.opts.Writers.Do(func() { system.Root.Send(future.PID(), writeResult{work()}) })
	ctx.ReenterAfter(future, func(res any, err error) {
		if b.epoch != epoch {
			return
		}
		if r, ok := res.(writeResult); ok {
			err = r.err
		}
		cont(err)
	})
}

// writeResult carries a writer job's error through a future.
type writeResult struct{ err error }

// resumeChildren brings back every recorded child from its own directory
// (docs/family.md#resume-of-children): exhausted or failed children are loaded for the
// tree but do not cycle; a missing directory is a warning. In once mode
// children are not started.
func (b *Being) resumeChildren(ctx actor.Context) {
	b.children = nil
	for _, rec := range b.st.Mind.Children {
		ref := &childRef{id: rec.ID, name: rec.Name}
		b.children = append(b.children, ref)
		if b.opts.Mode == Once || b.opts.Mode == Dormant {
			continue
		}
		// The directory is <state_dir>/children/<id>
		// (docs/state.md#the-state-directory); a record without an absolute
		// path (empty, or written relative to another working directory) is
		// found there.
		dir := rec.StateDir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(b.opts.StateDir, "children", rec.ID)
		}
		child, err := state.Load(dir)
		if err != nil {
			b.warn("child " + rec.Name + " cannot be resumed: " + err.Error())
			ref.done = true
			continue
		}
		opts := b.opts.child(dir, child.Identity.Name, child.Identity.Ticker, child.Identity.Specialty)
		opts.Mode = Run
		if child.Status == state.StatusExhausted || child.Status == state.StatusFailed {
			opts.Mode = Dormant
		}
		pid, err := ctx.SpawnNamed(Props(opts), childActorName(rec.Name, rec.ID))
		if err != nil {
			b.warn("child " + rec.Name + " cannot be started: " + err.Error())
			ref.done = true
			continue
		}
		ref.pid = pid
	}
}

// handleChildStopped records a child's final status.
func (b *Being) handleChildStopped(ctx actor.Context, msg messages.BeingStopped) {
	for _, ref := range b.children {
		if ref.id == msg.ID && !ref.done {
			ref.done = true
			b.departedHeld = b.departedHeld.Add(msg.Held)
			b.departedEarned = b.departedEarned.Add(msg.Earned)
			if ref.pid != nil {
				ctx.Stop(ref.pid)
			}
		}
	}
	if b.stop != nil {
		b.continueShutdown(ctx)
	}
}

// NewState returns the state of a fresh being
// (docs/state.md#the-state-file): the initial system prompt for its
// persona, the starting balance, status starting.
func NewState(id state.Identity, balance money.Amount, model string, at state.Time) *state.Being {
	return &state.Being{
		SchemaVersion: state.SchemaVersion,
		Identity:      id,
		Mind: state.Mind{
			SystemPrompt: prompt.InitialSystemPrompt(id.Name, id.Specialty),
			CurrentModel: model,
		},
		Status: state.StatusStarting,
		Budget: state.Budget{
			Starting:  balance,
			Remaining: balance,
		},
		StartedAt: at,
		UpdatedAt: at,
		// A fresh being's journal is empty: its checkpoint includes
		// nothing yet, so every later event is replayed on load.
		JournalSeq: new(uint64),
	}
}
