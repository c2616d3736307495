package crash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/wisent/singularity/test/testkit"
)

// The operator's commands during the storm (docs/money.md#funding,
// docs/family.md#messages).
const (
	// commandTimeout is each command's own --timeout: how long it waits
	// for a busy runtime or a held lock.
	commandTimeout = 5 * time.Second
	// commandWait bounds a command's process: one still running then
	// hangs, which the operator's channel must never do.
	commandWait = commandTimeout + 10*time.Second
	// freshPerRun is the most new commands one run gets.
	freshPerRun = 2
	// commandWithin is the window after a run's start in which its new
	// commands are issued, each at a random moment.
	commandWithin = 400 * time.Millisecond
)

// target is a being commands may go to: its directory, and its id for
// --being ("" for the root, the default).
type target struct{ dir, id string }

// operator issues the operator's commands to one family while its runs
// live and die: random funds and messages, each the real `singularity
// fund` or `say` with a deadline, and a command that was not
// acknowledged again with its key at the next start. Between sessions
// (while the test checks) its commands are the test's to read.
type operator struct {
	bin, root, home string
	family          int
	cmds            []*command
	issued          int // new commands so far, for unique keys
}

// session is the commands of one run.
type session struct {
	quit     chan struct{} // closed: start no more commands
	done     chan struct{} // closed when the last command has ended
	once     sync.Once
	problems []string
}

// start begins a session against the running family: first every
// command neither acknowledged nor refused, again, then up to fresh new
// ones, to the beings of targets, each at a random moment within
// commandWithin of the start.
func (o *operator) start(rng *rand.Rand, targets []target, fresh int) *session {
	s := &session{quit: make(chan struct{}), done: make(chan struct{})}
	var pending []*command
	for _, c := range o.cmds {
		if !c.acked && c.refuse == "" {
			pending = append(pending, c)
		}
	}
	var plan []*command
	var at []time.Duration
	for range fresh {
		if len(targets) == 0 {
			break
		}
		t := targets[rng.IntN(len(targets))]
		o.issued++
		c := &command{dir: t.dir, being: t.id, key: fmt.Sprintf("f%d-%d", o.family, o.issued)}
		if rng.IntN(2) == 0 {
			c.op, c.amount = "fund", fmt.Sprintf("0.%03d", 1+rng.IntN(40))
		} else {
			c.op, c.text = "say", fmt.Sprintf("operator note <%s>.", c.key)
		}
		o.cmds = append(o.cmds, c)
		plan = append(plan, c)
		at = append(at, time.Duration(rng.Int64N(int64(commandWithin))))
	}
	began := time.Now()
	go func() {
		defer close(s.done)
		for _, c := range pending {
			if s.stopping() {
				return
			}
			s.run(o, c)
		}
		for i, c := range plan {
			select {
			case <-s.quit:
				return
			case <-time.After(time.Until(began.Add(at[i]))):
			}
			s.run(o, c)
		}
	}()
	return s
}

func (s *session) stopping() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

// stop lets the command in flight end (it may meet a killed runtime and
// take the lock) and starts no other; it returns what went wrong.
func (s *session) stop() []string {
	s.once.Do(func() { close(s.quit) })
	<-s.done
	return s.problems
}

// finish waits until every command of the session has ended.
func (s *session) finish() []string {
	<-s.done
	return s.stop()
}

// run runs one command and records how it ended.
func (s *session) run(o *operator, c *command) {
	ctx, cancel := context.WithTimeout(context.Background(), commandWait)
	defer cancel()
	args := []string{c.op, "--state-dir", o.root, "--key", c.key, "--timeout", commandTimeout.String()}
	if c.being != "" {
		args = append(args, "--being", c.being)
	}
	value := c.amount
	if c.op == "say" {
		value = c.text
	}
	cmd := exec.CommandContext(ctx, o.bin, append(args, value)...)
	cmd.Env = testkit.Environ(map[string]string{"PATH": os.Getenv("PATH"), "HOME": o.home})
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	c.tries++
	var exit *exec.ExitError
	line := strings.TrimSpace(stdout.String())
	switch {
	case ctx.Err() != nil:
		s.problems = append(s.problems, fmt.Sprintf("`%s` did not end within %v: %s", strings.Join(args, " "), commandWait, stderr.String()))
	case err == nil:
		want := "funded "
		if c.op == "say" {
			want = "said to "
		}
		if !strings.HasPrefix(line, want) || !strings.Contains(line, "(key "+c.key+")") {
			s.problems = append(s.problems, fmt.Sprintf("`%s` exited 0 with %q, not its line", strings.Join(args, " "), line))
			return
		}
		c.acked = true
	case errors.As(err, &exit) && exit.ExitCode() == 2:
		c.refuse = strings.TrimSpace(stderr.String())
	}
}
