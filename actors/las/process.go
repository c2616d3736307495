package las

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/wire/mcpwire"
)

// writeQueue is how many frames may wait for Las to read its stdin. A Las
// that stops reading fills it, and the next write fails the session
// rather than blocking the actor.
const writeQueue = 256

// exitAfterStdout bounds how long the waiter holds back the exit report
// so that lines Las wrote just before exiting (stdout and stderr) are
// handled first.
const exitAfterStdout = time.Second

// killWait bounds the wait for a SIGKILLed process to be reaped.
const killWait = 5 * time.Second

// Messages the process goroutines post to the actor. Each carries the
// generation of the process it comes from: after a restart, late news
// from the old process is recognised and ignored.
type (
	lineRead struct {
		gen  uint64
		line []byte
	}
	readEnded struct {
		gen uint64
		err error // io.EOF, or mcpwire.ErrLineTooLong, or a read error
	}
	processExited struct {
		gen uint64
		err error // from exec.Cmd.Wait: nil or the exit status
	}
	writeFailed struct {
		gen uint64
		err error
	}
)

// process is one running Las child. The actor owns it and is the only one
// to touch it; its goroutines only read, write, wait, and post messages.
type process struct {
	cmd    *exec.Cmd
	pid    int
	gen    uint64
	writes chan []byte
	closed bool          // writes closed: stdin is being shut
	done   chan struct{} // closed once the process has been reaped
}

// spawn starts Las in its own process group with exactly env, stdin and
// stdout as pipes and stderr logged line by line. post delivers the
// goroutines' messages to the actor.
func spawn(o Options, env []string, gen uint64, post func(any)) (*process, error) {
	command, args := o.Command, []string(nil)
	if o.Entrypoint != "" {
		args = append(args, o.Entrypoint)
	}
	if o.server != nil {
		command, args = o.server.Command, o.server.Args
	}
	// Its own process group, so the shutdown ladder reaches its children;
	// and SIGKILL when this process dies, however it dies
	// (docs/las.md#leftovers).
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if o.Keeper != "" {
		// The keeper runs Las with that parent-death signal and ends
		// the rest of its tree when this process dies.
		args = append([]string{KeeperCommand, strconv.Itoa(os.Getpid()), command}, args...)
		command = o.Keeper
		attr.Pdeathsig = keeperDeathSignal
	}
	cmd := exec.Command(command, args...)
	cmd.Env = append([]string{}, env...) // never nil: nil would inherit ours
	if o.server != nil {
		cmd.Dir = o.server.Dir
	}
	cmd.SysProcAttr = attr

	// Plain pipes (close-on-exec) rather than exec's StdoutPipe: Wait
	// must not close stdout under the reader, which finishes on its own
	// EOF.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW)
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	if err := cmd.Start(); err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW)
		return nil, err
	}
	// The child holds its own copies now.
	closeAll(stdinR, stdoutW, stderrW)
	trackGroup(cmd.Process.Pid)

	p := &process{cmd: cmd, pid: cmd.Process.Pid, gen: gen, writes: make(chan []byte, writeQueue), done: make(chan struct{})}
	readerDone, stderrDone := make(chan struct{}), make(chan struct{})
	go p.readStdout(stdoutR, o.MaxLineBytes, post, readerDone)
	go p.logStderr(stderrR, o.Logger, o.stderrPrefix(), o.Secrets, stderrDone)
	go p.writeStdin(stdinW, post)
	go p.wait(post, readerDone, stderrDone)
	return p, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

func (p *process) readStdout(r *os.File, max int, post func(any), done chan<- struct{}) {
	defer close(done)
	defer r.Close()
	lines := mcpwire.NewLineReader(r, max)
	for {
		line, err := lines.ReadLine()
		if err != nil {
			post(readEnded{gen: p.gen, err: err})
			if errors.Is(err, mcpwire.ErrLineTooLong) {
				// Keep draining so Las is not blocked writing to a
				// pipe nobody reads before it is killed.
				_, _ = io.Copy(io.Discard, r)
			}
			return
		}
		post(lineRead{gen: p.gen, line: line})
	}
}

func (p *process) logStderr(r *os.File, log *slog.Logger, prefix string, secrets *boundary.Secrets, done chan<- struct{}) {
	defer close(done)
	defer r.Close()
	lines := newStderrLines(r, maxStderrLine)
	for {
		line, cut, err := lines.next()
		if len(line) > 0 || cut || err == nil {
			text := secrets.RedactString(string(line))
			if cut {
				text += "…"
			}
			log.Info(prefix+text, "pid", p.pid)
		}
		if err != nil {
			return
		}
	}
}

// maxStderrLine is the longest stderr line logged whole; a longer one is
// logged cut at this length with "…", and the lines after it are logged
// as usual (docs/las.md#leftovers).
const maxStderrLine = 64 << 10

// stderrLines splits a stream into lines of at most max bytes, dropping
// (and flagging) the rest of longer ones, in bounded memory.
type stderrLines struct {
	r   *bufio.Reader
	max int
}

func newStderrLines(r io.Reader, max int) *stderrLines {
	return &stderrLines{r: bufio.NewReaderSize(r, 16<<10), max: max}
}

// next returns the next line without its newline, whether it was cut,
// and the read error that ended the stream (the last line may come with
// it).
func (l *stderrLines) next() (line []byte, cut bool, err error) {
	for {
		chunk, err := l.r.ReadSlice('\n')
		if room := l.max - len(line); room > 0 {
			take := chunk
			if len(take) > room {
				take = take[:room]
				cut = true
			}
			line = append(line, take...)
		} else if len(chunk) > 0 && !(len(chunk) == 1 && chunk[0] == '\n') {
			cut = true
		}
		switch {
		case err == nil:
			line = bytes.TrimRight(line, "\r\n")
			return line, cut, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return bytes.TrimRight(line, "\r\n"), cut, err
		}
	}
}

// writeStdin drains the frame queue into stdin; when the queue is closed
// it closes stdin, which is the first rung of the shutdown ladder.
func (p *process) writeStdin(w *os.File, post func(any)) {
	defer w.Close()
	for frame := range p.writes {
		if _, err := w.Write(frame); err != nil {
			post(writeFailed{gen: p.gen, err: err})
			for range p.writes { // discard the rest until the actor closes the queue
			}
			return
		}
	}
}

// wait reaps the process and reports its exit after its last stdout
// lines and stderr lines are through (or a bound passed: a grandchild
// may hold the pipes open), so the actor sees a crash after what Las said
// before it.
func (p *process) wait(post func(any), readerDone, stderrDone <-chan struct{}) {
	err := p.cmd.Wait()
	close(p.done)
	// Its group's stragglers are killed by the actor; what left the group
	// and was reparented here goes now (docs/las.md#leftovers).
	untrackGroup(p.pid)
	bound := time.NewTimer(exitAfterStdout)
	defer bound.Stop()
	for _, ch := range []<-chan struct{}{readerDone, stderrDone} {
		select {
		case <-ch:
		case <-bound.C:
			post(processExited{gen: p.gen, err: err})
			return
		}
	}
	post(processExited{gen: p.gen, err: err})
}

// write queues one frame for stdin without blocking.
func (p *process) write(frame []byte) error {
	if p.closed {
		return errors.New("stdin is closed")
	}
	select {
	case p.writes <- frame:
		return nil
	default:
		return fmt.Errorf("Las is not reading its stdin (%d frames queued)", writeQueue)
	}
}

func (p *process) closeStdin() {
	if !p.closed {
		p.closed = true
		close(p.writes)
	}
}

func (p *process) signalGroup(sig syscall.Signal) {
	// Negative pid: the whole process group Las leads, so its own
	// children go too.
	_ = syscall.Kill(-p.pid, sig)
}

func (p *process) exited(within time.Duration) bool {
	if within <= 0 {
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// shutdown is the ladder of a clean stop: close stdin and give Las the
// grace to finish and exit by itself; then SIGTERM the group and wait a
// little; then SIGKILL. Whatever is left of its group after the leader
// exits is killed too, so no process of this Las outlives the actor.
func (p *process) shutdown(grace, termGrace time.Duration) {
	p.closeStdin() // an MCP server's signal to finish: EOF on stdin
	if !p.exited(grace) {
		p.signalGroup(syscall.SIGTERM) // it did not go by itself: ask it to
		if !p.exited(termGrace) {
			p.signalGroup(syscall.SIGKILL) // it ignores us: end it
			p.exited(killWait)
			reapLeftovers()
			return
		}
	}
	p.signalGroup(syscall.SIGKILL) // stragglers it left in its group
	reapLeftovers()                // and those that left it (setsid), reparented to us
}

// kill ends a process that has already failed: there is nothing to wait
// for, so no grace.
func (p *process) kill() {
	p.closeStdin()
	p.signalGroup(syscall.SIGKILL)
	p.exited(killWait)
	reapLeftovers()
}
