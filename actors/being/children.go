package being

import (
	"fmt"
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
	// gone is set once its actor ended; revive asks it to start again
	// then (a fund applied to its directory un-ended it,
	// handleReviveChild).
	gone, revive bool
	// departed is what its BeingStopped added to the purse's departed
	// money, taken back when it lives again.
	departed messages.BeingStopped
	// ended says its life ended (exhausted or failed), until a fund
	// revives it: it takes no message (docs/family.md#messages).
	ended bool
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

// ChildActorName is the actor name a parent gives its child being name
// with id: what the operator's channel finds a live child by.
func ChildActorName(name, id string) string { return childActorName(name, id) }

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

// spawning is a spawn call in progress: the tool's effect, the child's
// directory, its starting balance and the child to start once the call's
// step is durable.
type spawning struct {
	spawn   builtin.Spawn
	dir     string
	balance money.Amount
	child   *childStart
}

// childStart is a spawned child's actor, started once it is recorded.
type childStart struct {
	id, name  string
	opts      Options
	actorName string
}

// spawnChild carries out the spawn tool's effect
// (docs/family.md#spawning, docs/money.md#funded-children). A funded
// child's endowment is granted first, as a step of its own: only once
// the grant is durable (and applied to the budget) is the child's
// state directory written, with the endowment as its starting balance.
// A minted child gets the configured starting balance. The call's result
// then records the child in the mind; only once that step is durable
// does the child actor start — except in once mode, where the child
// waits for the next `run --resume`. A crash between the steps is
// repaired at the next start (completeGrants, removeUngranted).
func (b *Being) spawnChild(ctx actor.Context, spawn builtin.Spawn) {
	req := spawn.Child
	s := &spawning{spawn: spawn, dir: filepath.Join(b.opts.StateDir, state.ChildRecordDir(req.ID)), balance: b.opts.StartingBalance}
	b.cycle.tool.spawn = s
	if req.Endowment.Sign() <= 0 {
		b.createChild(ctx)
		return
	}
	s.balance = req.Endowment
	b.commit(ctx, []state.Event{state.EndowmentGranted(spawn.Record(state.ChildRecordDir(req.ID)), req.Endowment)}, nextGrant)
}

// grantDurable writes the child's directory once its grant is applied.
func (b *Being) grantDurable(ctx actor.Context) {
	b.cycle.waiting = waitChild
	b.createChild(ctx)
}

// createChild writes the child's state directory with its starting
// balance on the writer pool (childWritten finishes the call).
func (b *Being) createChild(ctx actor.Context) {
	s := b.cycle.tool.spawn
	req := s.spawn.Child
	opts := b.opts.child(s.dir, req.Name, req.Ticker, req.Specialty)
	fresh := NewState(opts.Identity, s.balance, opts.Model, opts.now())
	s.child = &childStart{id: req.ID, name: req.Name, opts: opts, actorName: childActorName(req.Name, req.ID)}
	parent, dir, fault := b.opts.StateDir, s.dir, b.opts.StorageFault
	b.writerJob(ctx, replyChildWritten, func() error {
		return ensureChild(parent, dir, opts.Identity, fresh, fault)
	})
}

// childWritten finishes the spawn call: its result records the child,
// which starts once that step is durable.
func (b *Being) childWritten(ctx actor.Context, err error) {
	s := b.cycle.tool.spawn
	b.cycle.tool.spawn = nil
	started := builtin.ChildStarted{Actor: ctx.Self().Id + "/" + s.child.actorName, StateDir: state.ChildRecordDir(s.child.id)}
	if b.opts.Mode == Once {
		started.Status = state.StatusStarting
	}
	res := s.spawn.Finish(started, err)
	r := toolResult{outcome: res.Outcome, changes: res.Changes}
	if err == nil {
		r.child = s.child
	}
	b.toolDone(ctx, r)
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
	if err := state.MakeDir(filepath.Join(parent, "children")); err != nil {
		return fmt.Errorf("%w: %w", builtin.ErrChildState, err)
	}
	if _, _, _, err := bootChild(dir, id, fresh, fault); err != nil {
		return fmt.Errorf("%w: %w", builtin.ErrChildState, err)
	}
	return nil
}

// booting is the boot's repair of the family (repairFamily): the grants
// still to complete, and the child directories removed for want of one.
type booting struct {
	grants  []state.Grant
	removed []string
}

// repairFamily finishes what a crash left between a grant and its
// child (removeUngranted, completeGrants) before the children resume.
func (b *Being) repairFamily(ctx actor.Context) {
	if len(b.st.Grants) == 0 && b.opts.Fresh != nil {
		b.familyRepaired(ctx)
		return
	}
	b.boot = &booting{grants: append([]state.Grant(nil), b.st.Grants...)}
	b.removeUngranted(ctx)
}

// completeGrants finishes, exactly once, every grant whose child is not
// recorded (docs/money.md#funded-children): a crash came between the
// grant and the spawn call's result. The child is created from the grant
// when its state is missing (grantChildWritten), then recorded in the
// mind; its actor starts with the other recorded children. A child that
// cannot be created is a warning, and its grant is tried again at the
// next start.
func (b *Being) completeGrants(ctx actor.Context) {
	if len(b.boot.grants) == 0 {
		b.boot = nil
		b.familyRepaired(ctx)
		return
	}
	g := b.boot.grants[0]
	rec := g.Child
	dir, err := state.ChildDir(b.opts.StateDir, rec)
	if err != nil {
		// Never followed: the grant stays pending, and is reported at
		// every start.
		b.warn("child " + rec.Name + " of a grant cannot be created: " + err.Error())
		b.boot.grants = b.boot.grants[1:]
		b.completeGrants(ctx)
		return
	}
	opts := b.opts.child(dir, rec.Name, rec.Ticker, rec.Specialty)
	fresh := NewState(opts.Identity, g.Amount, opts.Model, rec.CreatedAt)
	parent, fault := b.opts.StateDir, b.opts.StorageFault
	b.writerJob(ctx, replyGrantChild, func() error {
		return ensureChild(parent, dir, opts.Identity, fresh, fault)
	})
}

// grantChildWritten records the child of the first grant still to
// complete, then goes on with the next.
func (b *Being) grantChildWritten(ctx actor.Context, err error) {
	g := b.boot.grants[0]
	b.boot.grants = b.boot.grants[1:]
	rec := g.Child
	if err != nil {
		b.warn("child " + rec.Name + " of a grant cannot be created yet: " + err.Error())
		b.completeGrants(ctx)
		return
	}
	rec.StateDir = state.ChildRecordDir(rec.ID)
	rec.Status = state.StatusRunning
	if b.opts.Mode == Once {
		rec.Status = state.StatusStarting
	}
	b.warn("completed the grant of child " + rec.ID + " interrupted by the previous stop")
	b.commit(ctx, []state.Event{state.ChildAdded(rec)}, nextGrantDone)
}

// removeUngranted removes every directory under children/ that neither
// a grant nor a child record accounts for (docs/money.md#funded-children):
// a spawn that crashed before its step was durable left it, and no child
// ever lived there. Each removal is a warning.
func (b *Being) removeUngranted(ctx actor.Context) {
	// The records as they stand now, copied for the writer's job.
	st := state.Being{Mind: state.Mind{Children: slices.Clone(b.st.Mind.Children)}, Grants: slices.Clone(b.st.Grants)}
	parent, repair := b.opts.StateDir, b.boot
	b.writerJob(ctx, replyUngranted, func() error {
		removed, err := state.RemoveUngranted(parent, &st)
		repair.removed = removed
		return err
	})
}

// ungrantedRemoved journals the removals (with the next step) and
// completes the grants.
func (b *Being) ungrantedRemoved(ctx actor.Context, err error) {
	for _, id := range b.boot.removed {
		b.warn("removed child directory " + id + " without a grant")
	}
	if err != nil {
		b.warn("child directories without a grant not removed: " + err.Error())
	}
	b.completeGrants(ctx)
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
// (in once mode, and in a family spread over members, it only records
// it).
func (b *Being) startChild(ctx actor.Context, c *childStart) {
	ref := &childRef{id: c.id, name: c.name}
	b.children = append(b.children, ref)
	if b.opts.Mode == Once || b.opts.placement().ChildrenElsewhere() {
		return
	}
	opts := c.opts
	opts.Mode = Run
	pid, err := ctx.SpawnNamed(Props(opts), c.actorName)
	if err != nil {
		b.warn("child " + c.name + " cannot be started: " + err.Error())
		ref.done = true
		return
	}
	ref.pid = pid
}

// resumeChildren brings back every recorded child from its own directory
// (docs/family.md#resume-of-children): exhausted or failed children are loaded for the
// tree but do not cycle; a missing directory is a warning. In once mode,
// and in a family spread over members, children are not started.
//
// A child this being started before, in a life that ended (it rested
// under its family's hold and a fund revived it, awaken), stays as it
// is: loading its directory again would lose the hold, and it lives
// from the family's next hold. Its departed money stays counted.
func (b *Being) resumeChildren(ctx actor.Context) {
	before := b.children
	b.children = nil
	for _, rec := range b.st.Mind.Children {
		if i := slices.IndexFunc(before, func(r *childRef) bool { return r.id == rec.ID && r.pid != nil }); i >= 0 {
			b.log.Info("child " + rec.Name + " stopped with this being's end: it lives from the family's next hold")
			b.children = append(b.children, before[i])
			continue
		}
		ref := &childRef{id: rec.ID, name: rec.Name}
		b.children = append(b.children, ref)
		if b.opts.Mode == Once || b.opts.Mode == Dormant || b.opts.placement().ChildrenElsewhere() {
			continue
		}
		b.startRecorded(ctx, ref, rec)
	}
}

// startRecorded starts the actor of the recorded child rec (ref): from
// its own directory, dormant when its state.json says it ended (its
// load settles that against its journal, settleMode).
func (b *Being) startRecorded(ctx actor.Context, ref *childRef, rec state.Child) {
	// The directory is <state_dir>/children/<id>, whatever the record
	// says (docs/state.md#child-directories): a moved family finds its
	// children, a copy never reaches the original's, and a record that
	// points elsewhere, or a directory that is a link, is refused.
	dir, err := state.ChildDir(b.opts.StateDir, rec)
	if err == nil {
		err = state.CheckChildDir(dir)
	}
	if err != nil {
		b.warn("child " + rec.Name + " cannot be resumed: " + err.Error())
		ref.done = true
		return
	}
	child, err := state.Load(dir)
	if err != nil {
		b.warn("child " + rec.Name + " cannot be resumed: " + err.Error())
		ref.done = true
		return
	}
	opts := b.opts.child(dir, child.Identity.Name, child.Identity.Ticker, child.Identity.Specialty)
	opts.Mode = Run
	if child.Status == state.StatusExhausted || child.Status == state.StatusFailed {
		opts.Mode = Dormant
		ref.ended = true
	}
	pid, err := ctx.SpawnNamed(Props(opts), childActorName(rec.Name, rec.ID))
	if err != nil {
		b.warn("child " + rec.Name + " cannot be started: " + err.Error())
		ref.done = true
		return
	}
	ref.pid = pid
}

// handleReviveChild starts again a child that a fund un-ended
// (docs/money.md#funding): at once when its actor has ended, else when
// it has (handleTerminated). What it held leaves the departed money: it
// is on the tree again. A being that stops, or one whose children run
// elsewhere, starts nothing.
func (b *Being) handleReviveChild(ctx actor.Context, msg messages.ReviveChild) {
	if b.stop != nil || b.phase == phaseBooting || b.phase >= phaseStoppingChildren ||
		b.opts.Mode != Run || b.opts.placement().ChildrenElsewhere() {
		return
	}
	for _, ref := range b.children {
		if ref.id != msg.ID {
			continue
		}
		ref.revive = true
		if ref.gone || ref.pid == nil {
			b.reviveChild(ctx, ref)
		}
	}
}

// handleChildLife notes that the child id, whose actor goes on, ended
// its life (messages.BeingEnded: it rests dormant under its family's
// hold) or lives again (messages.BeingRevived: a fund un-ended it): an
// ended child takes no relative's message (docs/family.md#messages).
func (b *Being) handleChildLife(id string, ended bool) {
	if ref := b.child(id); ref != nil {
		ref.ended = ended
	}
}

// reviveChild starts the actor of ref again from its recorded child.
func (b *Being) reviveChild(ctx actor.Context, ref *childRef) {
	ref.revive = false
	for _, rec := range b.st.Mind.Children {
		if rec.ID != ref.id {
			continue
		}
		if ref.done {
			d := ref.departed
			b.purse.departedHeld = b.purse.departedHeld.Sub(d.Held)
			b.purse.departedEarned = b.purse.departedEarned.Sub(d.Earned)
			b.purse.departedFunded = b.purse.departedFunded.Sub(d.Funded)
		}
		ref.done, ref.gone, ref.pid, ref.departed, ref.ended = false, false, nil, messages.BeingStopped{}, false
		b.startRecorded(ctx, ref, rec)
		return
	}
}

// handleChildStopped records a child's final status.
func (b *Being) handleChildStopped(ctx actor.Context, msg messages.BeingStopped) {
	for _, ref := range b.children {
		if ref.id == msg.ID && !ref.done {
			ref.done = true
			ref.departed = msg
			ref.ended = msg.Status == state.StatusExhausted || msg.Status == state.StatusFailed
			b.purse.departedHeld = b.purse.departedHeld.Add(msg.Held)
			b.purse.departedEarned = b.purse.departedEarned.Add(msg.Earned)
			b.purse.departedFunded = b.purse.departedFunded.Add(msg.Funded)
			if ref.pid != nil {
				ctx.Stop(ref.pid)
			}
		}
	}
	if b.stop != nil {
		b.continueShutdown(ctx)
	}
}

// handleSubtreeStopped goes on with a stop for good once the member has
// had every child stop (a family spread over members).
func (b *Being) handleSubtreeStopped(ctx actor.Context) {
	if b.stop == nil || !b.stop.awaitingSubtree {
		return
	}
	b.stop.awaitingSubtree = false
	b.continueShutdown(ctx)
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
