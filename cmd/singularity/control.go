package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/wisent/singularity/actors/las"
	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/supervision/fault"
)

// operatorFlags are what `fund` and `say` share: the family, the being,
// the key, and how long the command waits.
type operatorFlags struct {
	StateDir string        `name:"state-dir" env:"SINGULARITY_STATE_DIR" default:".singularity" placeholder:"DIR" help:"The root being's state directory."`
	Being    string        `name:"being" placeholder:"NAME|ID" help:"The being, by name or id (default: the root)."`
	Key      string        `name:"key" help:"Idempotency key: a second command with the same key is not applied again (default: a random key, printed)."`
	Timeout  time.Duration `name:"timeout" default:"60s" help:"How long to wait for the running family (or the being's lock) before giving up."`

	// screen, once loaded (screened), are the secrets this command
	// screens what it journals itself against (secrets).
	screen   *boundary.Secrets
	screened bool
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
	notHere := false
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		if time.Until(deadline) <= 0 {
			if notHere {
				return control.Reply{}, noMember(dir)
			}
			return control.Reply{}, fault.Errorf(fault.ClassState, "no answer within %s: the family's runtime is busy, or a runtime holds the being's directory without its control socket", o.Timeout)
		}
		reply, done, err := o.ask(req, deadline)
		if done || err != nil {
			return reply, err
		}
		// Members that hold the being elsewhere: it may be between
		// members (a takeover), ask again.
		notHere = reply.NotHere
		if !reply.Busy && !reply.NotHere {
			// No runtime listens: this command applies it.
			reply, done, err = o.apply(e, dir, req)
			if done || err != nil {
				return reply, err
			}
		}
		time.Sleep(min(wait, time.Until(deadline)))
	}
}

// noMember is the refusal of a being of a family across members that
// no member holds.
func noMember(dir string) error {
	return fault.Errorf(fault.ClassCluster,
		"no member of the family across members holds %s now (it ended, or no member runs); fund and say reach a being through the member that holds it", dir)
}

// ask offers req to every runtime listening in the state root: the
// family's `run` (control.sock), then each member of a family across
// members (control-<member>.sock). done says one answered for good; else
// the reply says whether one was busy (ask again) or every member holds
// the being elsewhere (NotHere). A zero reply means none listens.
func (o *operatorFlags) ask(req control.Request, deadline time.Time) (control.Reply, bool, error) {
	sockets := []string{filepath.Join(o.StateDir, control.SocketName)}
	members, _ := filepath.Glob(filepath.Join(o.StateDir, control.MemberSockets))
	sockets = append(sockets, members...)
	var seen control.Reply
	for _, socket := range sockets {
		reply, err := control.Ask(socket, req, time.Until(deadline))
		switch {
		case errors.Is(err, control.ErrNoRuntime):
			continue
		case err != nil:
			return control.Reply{}, true, fault.Errorf(fault.ClassRuntime, "%w", err)
		case reply.Busy:
			seen.Busy = true
		case reply.NotHere:
			seen.NotHere = true
		case reply.Refusal != "":
			return control.Reply{}, true, fault.New(fault.ClassConfiguration, reply.Refusal)
		case reply.Failure != "":
			return control.Reply{}, true, fault.New(fault.ClassRuntime, reply.Failure)
		default:
			return reply, true, nil
		}
	}
	if seen.Busy {
		seen.NotHere = false
	}
	return seen, false, nil
}

// apply carries req out under the being's lock when no runtime listens
// (control.Apply); a directory a runtime holds (one starting or
// stopping) is not done yet. A being of a family across members is
// written only by the member that holds it: this command refuses it.
func (o *operatorFlags) apply(e *env, dir string, req control.Request) (control.Reply, bool, error) {
	if _, err := os.Stat(filepath.Join(dir, state.HeldDir)); err == nil {
		return control.Reply{}, true, noMember(dir)
	}
	reply, err := control.Apply(dir, req, o.secrets(e), state.Now)
	switch {
	case errors.Is(err, state.ErrInUse):
		return control.Reply{}, false, nil
	case errors.Is(err, control.ErrRefused):
		return control.Reply{}, true, refusal(err)
	case err != nil:
		return control.Reply{}, true, fault.Errorf(fault.ClassState, "%w", err)
	}
	return reply, true, nil
}

// secrets are the secrets of the configuration in scope, which a message
// this command journals itself is screened against, as a running
// runtime screens it (docs/family.md#messages): run's flags as the
// environment and the configuration file give them, loaded as run loads
// them, once a command. None when that configuration does not load (a
// state directory named alone): the text is journaled as typed.
func (o *operatorFlags) secrets(e *env) *boundary.Secrets {
	if !o.screened {
		o.screen, o.screened = configuredSecrets(e), true
	}
	return o.screen
}

// configuredSecrets loads the secrets of operatorFlags.secrets.
func configuredSecrets(e *env) *boundary.Secrets {
	var c struct {
		config.Flags `embed:""`
	}
	opts := []kong.Option{kong.Exit(func(int) {}), kong.Writers(io.Discard, io.Discard), kong.Vars{"las_only": las.DefaultOnly}}
	if e.file != nil {
		opts = append(opts, kong.Resolvers(fileResolver{file: e.file, lookupEnv: e.lookupEnv}))
	}
	parser, err := kong.New(&c, opts...)
	if err != nil {
		return nil
	}
	if _, err := parser.Parse(nil); err != nil {
		return nil
	}
	rt, err := config.Load(c.Flags, e.lookupEnv)
	if err != nil {
		return nil
	}
	return secrets(rt)
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
	if len(found) == 0 {
		// A family across members records its children in its holders'
		// journals: their directories name them too.
		found = childDirsNamed(o.StateDir, o.Being)
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

// childDirsNamed are the beings under root's children/ directories,
// at any depth, whose id (directory name) or first state's name is
// nameOrID.
func childDirsNamed(root, nameOrID string) []accounts.Being {
	var found []accounts.Being
	dirs, _ := filepath.Glob(filepath.Join(root, "children", "*"))
	for _, dir := range dirs {
		st, err := state.Load(dir)
		if err != nil {
			continue
		}
		if id := filepath.Base(dir); id == nameOrID || st.Identity.Name == nameOrID {
			found = append(found, accounts.Being{ID: id, Name: st.Identity.Name, StateDir: dir})
		}
		found = append(found, childDirsNamed(dir, nameOrID)...)
	}
	return found
}

// refusal is a refused request as the command's error: exit 2.
func refusal(err error) error {
	return fault.Errorf(fault.ClassConfiguration, "%w", err)
}
