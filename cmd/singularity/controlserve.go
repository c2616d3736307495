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
	"github.com/wisent/singularity/internal/store/accounts"
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
	path := filepath.Join(root, control.SocketName)
	if _, err := control.Ask(path, control.Request{}, time.Second); !errors.Is(err, control.ErrNoRuntime) {
		return nil, nil
	}
	r := &router{system: l.system, root: root, secrets: secrets}
	return control.Listen(path, controlTimeout, r.handle)
}

// router carries a control request to the being it names: by message
// to its actor when it lives, else (its actor ended: exhausted, failed,
// or stopping) to its directory under its lock, after which its parent
// is asked to start it again.
type router struct {
	system  *actor.ActorSystem
	root    string
	secrets *boundary.Secrets
}

// handle answers req within the deadline of ctx; it runs on the
// socket's connection goroutine and waits for no actor longer than that.
func (r *router) handle(ctx context.Context, req control.Request) control.Reply {
	pid, parent, err := r.pids(req.Being)
	if err != nil {
		return control.Reply{Refusal: err.Error()}
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
		reply, err := r.ask(pid, req, left)
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

// ask asks the being's actor and waits at most left.
func (r *router) ask(pid *actor.PID, req control.Request, left time.Duration) (control.Reply, error) {
	var msg any = messages.MessageRequest{Message: state.InMessage{ID: req.Key, From: state.FromOperator, Text: req.Text}}
	if req.Op == control.OpFund {
		msg = messages.FundRequest{Amount: req.Amount, Key: req.Key, Note: req.Note}
	}
	res, err := r.system.Root.RequestFuture(pid, msg, left).Result()
	if err != nil {
		return control.Reply{}, err
	}
	switch res := res.(type) {
	case messages.FundResponse:
		return control.Reply{Name: res.Name, Key: req.Key, Amount: res.Amount, Remaining: res.Remaining, Duplicate: res.Duplicate}, res.Err
	case messages.MessageResponse:
		return control.Reply{Name: res.Name, Key: req.Key, Duplicate: res.Duplicate}, res.Err
	}
	return control.Reply{}, errors.New("the being answered what it was not asked")
}

// pids are the actor of the being living in rel (its state directory
// relative to the root) and its parent's (nil for the root): a child's
// actor is named by its record in its parent (being.ChildActorName).
func (r *router) pids(rel string) (*actor.PID, *actor.PID, error) {
	id := "family/" + family.RootName
	var parent string
	if rel != "." {
		fam, err := accounts.Read(r.root)
		if err != nil {
			return nil, nil, err
		}
		names := map[string]string{}
		for _, b := range fam.Beings {
			names[b.StateDir] = b.Name
		}
		dir := r.root
		for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
			dir = filepath.Join(dir, part)
			if part == "children" {
				continue
			}
			parent = id
			id += "/" + being.ChildActorName(names[dir], part)
		}
	}
	pid := r.system.NewLocalPID(id)
	if parent == "" {
		return pid, nil, nil
	}
	return pid, r.system.NewLocalPID(parent), nil
}
