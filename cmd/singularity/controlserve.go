package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/messages"
)

// controlTimeout bounds the runtime's answer to one control request.
const controlTimeout = 30 * time.Second

// serveControl opens the family's control socket in its state root
// (docs/family.md#the-operators-channel). A socket a live runtime
// answers on is left alone (this runtime is refused the root's lock
// anyway); one a killed runtime left behind is replaced.
func serveControl(l *live, root string, secrets *boundary.Secrets) (*control.Server, error) {
	r := &router{system: l.system, root: root, secrets: secrets}
	return listenControl(r.handle, filepath.Join(root, control.SocketName))
}

// memberRouter is a cluster member's router, for its control socket,
// control-<member>.sock in the shared state root, and its link: the
// member answers for the beings it holds, and says it holds none of the
// others (docs/cluster.md#the-operators-channel). placed says the
// family's beings are spread over the members, each its own actor
// under the family.
func memberRouter(l *live, root string, placed bool, secrets *boundary.Secrets, session *fence.Session, lease time.Duration) *router {
	return &router{system: l.system, root: root, secrets: secrets, member: true, placed: placed, session: session, lease: lease}
}

// listenControl opens a control socket at path that handle answers;
// nil when a live runtime answers there already.
func listenControl(handle control.Handler, path string) (*control.Server, error) {
	if _, err := control.Ask(path, control.Request{}, time.Second); !errors.Is(err, control.ErrNoRuntime) {
		return nil, nil
	}
	return control.Listen(path, controlTimeout, handle)
}

// router carries a control request to the being it names: by message
// to its actor when it lives, else (its actor ended: exhausted, failed,
// or stopping) to its directory under its lock, after which its parent
// is asked to start it again. A cluster member's router never writes a
// being's directory itself: a being it does not hold is not its own.
type router struct {
	system  *actor.ActorSystem
	root    string
	secrets *boundary.Secrets
	// member is set on a cluster member, placed when its family's
	// beings are spread over the members; session is then the member's
	// etcd session, and lease its lease.
	member, placed bool
	session        *fence.Session
	lease          time.Duration
}

// handle answers req within the deadline of ctx; it runs on the
// socket's connection goroutine and waits for no actor longer than that.
func (r *router) handle(ctx context.Context, req control.Request) control.Reply {
	pid, parent, err := r.pids(req.Being)
	if err != nil {
		return control.Reply{Failure: err.Error()}
	}
	dir := filepath.Join(r.root, req.Being)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		deadline, _ := ctx.Deadline()
		left := time.Until(deadline)
		if ctx.Err() != nil || left <= 0 {
			// The runtime stops, or the being stops and its lock is
			// not free yet: nothing was written, the command asks again.
			return control.Reply{Busy: true}
		}
		reply, err := r.ask(ctx, pid, req, left)
		if errors.Is(err, actor.ErrDeadLetter) && r.member {
			return r.fundEnded(ctx, dir, req)
		}
		if errors.Is(err, actor.ErrDeadLetter) && req.Op == control.OpRelay {
			// A relayed message is for a being a runtime runs, never
			// written to a directory by a router.
			return control.Reply{NotHere: true}
		}
		if errors.Is(err, actor.ErrDeadLetter) {
			reply, err = control.Apply(dir, req, r.secrets, state.Now)
			if err == nil && parent != nil && req.Op == control.OpFund && !reply.Duplicate {
				r.system.Root.Send(parent, messages.ReviveChild{ID: filepath.Base(dir)})
			}
		}
		switch {
		case err == nil:
			return reply
		case errors.Is(err, control.ErrRefused):
			return control.Reply{Refusal: err.Error()}
		case errors.Is(err, context.Canceled):
			return control.Reply{Busy: true}
		case errors.Is(err, control.ErrBusy), errors.Is(err, state.ErrInUse):
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		default:
			return control.Reply{Failure: err.Error()}
		}
	}
}

// ask asks the being's actor and waits at most left, or until ctx ends
// (the server closes: context.Canceled). An answer that comes after is
// lost, and the effect may have taken place: the command asks again
// with the same key, which is not applied twice.
func (r *router) ask(ctx context.Context, pid *actor.PID, req control.Request, left time.Duration) (control.Reply, error) {
	var msg any = messages.MessageRequest{Message: state.InMessage{ID: req.Key, From: state.FromOperator, Text: req.Text}}
	switch req.Op {
	case control.OpFund:
		msg = messages.FundRequest{Amount: req.Amount, Key: req.Key, Note: req.Note}
	case control.OpRelay:
		msg = messages.MessageRequest{Message: state.InMessage{ID: req.Key, From: req.From, Name: req.Name, Relation: req.Relation, Text: req.Text}}
	}
	type answer struct {
		res any
		err error
	}
	done := make(chan answer, 1)
	future := r.system.Root.RequestFuture(pid, msg, left)
	go func() {
		res, err := future.Result()
		done <- answer{res, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		return control.Reply{}, context.Canceled
	}
	res, err := a.res, a.err
	if err != nil {
		return control.Reply{}, err
	}
	switch res := res.(type) {
	case messages.FundResponse:
		return control.Reply{Name: res.Name, Key: req.Key, Amount: res.Amount, Remaining: res.Remaining, Duplicate: res.Duplicate}, res.Err
	case messages.MessageResponse:
		return control.Reply{Name: res.Name, Key: req.Key, Duplicate: res.Duplicate, Ended: res.Ended}, res.Err
	}
	return control.Reply{}, errors.New("the being answered what it was not asked")
}

// pids are the actor of the being living in rel (its state directory
// relative to the root) and its parent's (nil for the root): a child's
// actor is named by its record in its parent (being.ChildActorName).
func (r *router) pids(rel string) (*actor.PID, *actor.PID, error) {
	if r.placed {
		// Each being of a spread family is its member's family's child.
		return r.system.NewLocalPID("family/" + family.PlacedName(filepath.Join(r.root, rel))), nil, nil
	}
	id := "family/" + family.RootName
	var parent string
	if rel != "." {
		dir := r.root
		for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
			dir = filepath.Join(dir, part)
			if part == "children" {
				continue
			}
			// A being's name never changes: its first state's is its
			// record's.
			st, err := state.Load(dir)
			if err != nil {
				return nil, nil, err
			}
			parent = id
			id += "/" + being.ChildActorName(st.Identity.Name, part)
		}
	}
	pid := r.system.NewLocalPID(id)
	if parent == "" {
		return pid, nil, nil
	}
	return pid, r.system.NewLocalPID(parent), nil
}

// fundEnded funds a being of a spread family that no member holds
// because it ended exhausted (its ended/ mark says so): under the
// being's own lock, taken for this step alone, the fund is journaled as
// the being's next holder would journal it, and its commit takes the
// ended/ mark away (fence.Committer.FenceStep), after which a member
// places the being again and it lives. Anything else this member does
// not hold is not its own (NotHere): another member may hold it.
func (r *router) fundEnded(ctx context.Context, dir string, req control.Request) control.Reply {
	id := member.BeingID(r.root, dir)
	if !r.placed || r.session == nil || req.Op != control.OpFund || id == member.RootBeing {
		return control.Reply{NotHere: true}
	}
	ended, err := r.session.EndedBeings(ctx)
	if err != nil || ended[id] != state.StatusExhausted {
		return control.Reply{NotHere: true}
	}
	locks, err := r.session.TryLockAll(ctx, []string{id})
	lock := locks[id]
	if err != nil || lock == nil {
		return control.Reply{NotHere: true}
	}
	defer func() {
		unlockCtx, cancel := context.WithTimeout(context.Background(), r.lease)
		defer cancel()
		_ = lock.Unlock(unlockCtx)
	}()
	hold := member.NewSpreadHolding(r.session, lock, nil, r.root, r.lease)
	held, fenced, err := hold.Hold(dir)
	if err != nil {
		return control.Reply{Failure: err.Error()}
	}
	reply, err := control.ApplyWith(func(cfg durable.Config) (*durable.Engine, *state.Being, error) {
		cfg.Fence = fenced
		return durable.OpenHeld(dir, *held, cfg)
	}, dir, req, r.secrets, state.Now)
	switch {
	case errors.Is(err, control.ErrRefused):
		return control.Reply{Refusal: err.Error()}
	case err != nil:
		return control.Reply{Failure: err.Error()}
	}
	return reply
}
