package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/supervision/fault"
)

// operatorFlags are what `fund` and `say` share: the family, the being,
// the key, and how long the command waits.
type operatorFlags struct {
	StateDir string        `name:"state-dir" env:"SINGULARITY_STATE_DIR" default:".singularity" placeholder:"DIR" help:"The root being's state directory."`
	Being    string        `name:"being" placeholder:"NAME|ID" help:"The being, by name or id (default: the root)."`
	Key      string        `name:"key" help:"Idempotency key: a second command with the same key is not applied again (default: a random key, printed)."`
	Timeout  time.Duration `name:"timeout" default:"60s" help:"How long to wait for the running family (or the being's lock) before giving up."`
}

type fundCmd struct {
	operatorFlags `embed:""`
	Amount        string `arg:"" name:"amount" help:"USD to add: a decimal above 0, at most 1000000, at most 12 decimal places."`
	Note          string `name:"note" help:"A note journaled with the fund."`
}

type sayCmd struct {
	operatorFlags `embed:""`
	Text          string `arg:"" name:"text" help:"The message: UTF-8, at most 8 KiB."`
}

// Run is `singularity fund` (docs/money.md#funding).
func (f *fundCmd) Run(e *env) error {
	amount, err := control.ParseAmount(f.Amount)
	if err != nil {
		return refusal(err)
	}
	req := control.Request{Op: control.OpFund, Amount: amount, Key: f.Key, Note: f.Note}
	reply, err := f.send(e, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "funded %s %s USD (key %s); remaining %s USD\n", reply.Name, reply.Amount, reply.Key, reply.Remaining)
	return nil
}

// Run is `singularity say` (docs/family.md#messages).
func (s *sayCmd) Run(e *env) error {
	if err := control.CheckText(s.Text); err != nil {
		return refusal(err)
	}
	reply, err := s.send(e, control.Request{Op: control.OpSay, Text: s.Text, Key: s.Key})
	if err != nil {
		return err
	}
	line := fmt.Sprintf("said to %s (key %s)", reply.Name, reply.Key)
	if reply.Duplicate {
		line += "; it had it already"
	}
	fmt.Fprintln(e.stdout, line)
	return nil
}

// send checks req, finds the being, and has req carried out: by the
// runtime that holds the family, through its control socket, or, when
// none does, under the being's lock by this command (control.Apply).
// Nothing is written when it is refused.
func (o *operatorFlags) send(e *env, req control.Request) (control.Reply, error) {
	if err := e.checkStateDir(o.StateDir); err != nil {
		return control.Reply{}, err
	}
	if req.Key == "" {
		req.Key = control.NewKey()
	}
	if err := control.CheckKey(req.Key); err != nil {
		return control.Reply{}, refusal(err)
	}
	dir, err := o.being()
	if err != nil {
		return control.Reply{}, err
	}
	rel, err := filepath.Rel(o.StateDir, dir)
	if err != nil {
		return control.Reply{}, fault.Errorf(fault.ClassState, "%w", err)
	}
	req.Being = rel
	deadline := time.Now().Add(o.Timeout)
	socket := filepath.Join(o.StateDir, control.SocketName)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		left := time.Until(deadline)
		if left <= 0 {
			return control.Reply{}, fault.Errorf(fault.ClassState, "no answer within %s: the family's runtime is busy, or a runtime holds the being's directory without its control socket", o.Timeout)
		}
		reply, err := control.Ask(socket, req, left)
		if errors.Is(err, control.ErrNoRuntime) {
			reply, err = control.Apply(dir, req, nil, state.Now)
			if errors.Is(err, state.ErrInUse) {
				// A runtime starting, or stopping: ask again.
				time.Sleep(min(wait, time.Until(deadline)))
				continue
			}
			if errors.Is(err, control.ErrRefused) {
				return control.Reply{}, refusal(err)
			}
			if err != nil {
				return control.Reply{}, fault.Errorf(fault.ClassState, "%w", err)
			}
			return reply, nil
		}
		if err != nil {
			return control.Reply{}, fault.Errorf(fault.ClassRuntime, "%w", err)
		}
		switch {
		case reply.Busy:
			time.Sleep(min(wait, time.Until(deadline)))
			continue
		case reply.Refusal != "":
			return control.Reply{}, fault.New(fault.ClassConfiguration, reply.Refusal)
		case reply.Failure != "":
			return control.Reply{}, fault.New(fault.ClassRuntime, reply.Failure)
		}
		return reply, nil
	}
}

// being is the state directory of the being --being names (the root
// when it names none), as the family's directories say it now.
func (o *operatorFlags) being() (string, error) {
	fam, err := accounts.Read(o.StateDir)
	if err != nil {
		return "", fault.Errorf(fault.ClassState, "%w", err)
	}
	if o.Being == "" {
		return o.StateDir, nil
	}
	var found []accounts.Being
	for _, b := range fam.Beings {
		if b.ID == o.Being || b.Name == o.Being {
			found = append(found, b)
		}
	}
	switch len(found) {
	case 0:
		return "", fault.Errorf(fault.ClassConfiguration, "no being of the family in %s is named or has the id %q", o.StateDir, o.Being)
	case 1:
		return found[0].StateDir, nil
	}
	ids := make([]string, len(found))
	for i, b := range found {
		ids[i] = b.ID
	}
	return "", fault.Errorf(fault.ClassConfiguration, "%d beings are named %q (ids %s): give the id", len(found), o.Being, strings.Join(ids, ", "))
}

// refusal is a refused request as the command's error: exit 2.
func refusal(err error) error {
	return fault.Errorf(fault.ClassConfiguration, "%w", err)
}
