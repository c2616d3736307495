package mcpstdio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/wisent/singularity/internal/wire/mcpwire"
)

// WriteQueue is how many frames may wait for the server to read its
// stdin. A server that stops reading fills it, and the next write fails
// the session rather than blocking the writer.
const WriteQueue = 256

// exitAfterStdout bounds how long the waiter holds back the exit report
// so that lines the server wrote just before exiting (stdout and stderr)
// are handled first.
const exitAfterStdout = time.Second

// eofSettle is how long a closed stdout waits for the exit report,
// which names the better reason.
const eofSettle = 200 * time.Millisecond

// killWait bounds the wait for a SIGKILLed process to be reaped.
const killWait = 5 * time.Second

// maxStderrLine is the longest stderr line passed on whole; a longer one
// is passed cut at this length with "…", and the lines after it as
// usual (docs/las.md#spawn).
const maxStderrLine = 64 << 10

// maxStderrStream is the longest stderr line a server may write: one
// longer ends the passing of its stderr, with one warning, and the rest
// of the stream is drained unread (docs/configuration.md#logging).
const maxStderrStream = 1 << 20

// errStderrLineTooLong is a stderr line longer than maxStderrStream.
var errStderrLineTooLong = errors.New("stderr line longer than 1 MiB")

// process is one running server. Its goroutines read stdout (handing
// each line to the session), pass stderr on line by line, drain the
// write queue into stdin and reap the process; each failure they see
// ends the session.
type process struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{} // closed once the process has been reaped
}

// spawn starts the server of cfg in its own process group with exactly
// cfg.Env, stdin and stdout as pipes and stderr passed to cfg.Stderr.
func (s *Session) spawn() error {
	cfg := s.cfg
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Env = append([]string{}, cfg.Env...) // never nil: nil would inherit ours
	cmd.Dir = cfg.Dir
	// Its own process group, so the shutdown ladder reaches its children;
	// and a parent-death signal, so it ends when this process dies,
	// however it dies (docs/las.md#leftovers).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: cfg.DeathSignal}

	// Plain pipes (close-on-exec) rather than exec's StdoutPipe: Wait
	// must not close stdout under the reader, which finishes on its own
	// EOF.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW)
		return err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW)
		return err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	var reportR, reportW *os.File
	if cfg.Keeper {
		if reportR, reportW, err = os.Pipe(); err != nil {
			closeAll(stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW)
			return err
		}
		cmd.ExtraFiles = []*os.File{reportW} // the keeper's keeper.ReportFD
	}
	if err := startTracked(cmd); err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW)
		if reportR != nil {
			closeAll(reportR, reportW)
		}
		return err
	}
	// The child holds its own copies now.
	closeAll(stdinR, stdoutW, stderrW)
	if reportR != nil {
		_ = reportW.Close()
		if err := readStartReport(reportR); err != nil {
			// The keeper exits once it has reported: reap it.
			closeAll(stdinW, stdoutR, stderrR)
			_ = cmd.Wait()
			untrackGroup(cmd.Process.Pid)
			return err
		}
	}

	s.proc = &process{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	readerDone, stderrDone := make(chan struct{}), make(chan struct{})
	go s.readStdout(stdoutR, readerDone)
	go s.passStderr(stderrR, stderrDone)
	go s.writeStdin(stdinW)
	go s.wait(readerDone, stderrDone)
	return nil
}

// readStartReport reads a keeper's start report to its end, which
// comes when the keeper has started the server (the pipe is
// close-on-exec there) or has exited: an empty report is a started
// server, any text is why it could not be started.
func readStartReport(r *os.File) error {
	defer r.Close()
	text, err := io.ReadAll(io.LimitReader(r, maxStartReport))
	if err != nil {
		return fmt.Errorf("reading the keeper's start report: %w", err)
	}
	if len(text) == 0 {
		return nil
	}
	return &StartError{Reason: string(text)}
}

// maxStartReport bounds a keeper's start report.
const maxStartReport = 4 << 10

// StartError is a server its keeper could not execute (Config.Keeper):
// Reason is the keeper's error, as exec's own would read without a
// keeper ("fork/exec /bin/las: no such file or directory").
type StartError struct{ Reason string }

func (e *StartError) Error() string { return e.Reason }

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// readStdout hands every line to the session. A line over the limit
// ends the session at once; end of file ends it once the exit report had
// its chance to come first (eofSettle).
func (s *Session) readStdout(r *os.File, done chan<- struct{}) {
	defer r.Close()
	lines := mcpwire.NewLineReader(r, s.cfg.MaxLineBytes)
	for {
		line, err := lines.ReadLine()
		if err == nil {
			s.handleLine(line)
			continue
		}
		if errors.Is(err, mcpwire.ErrLineTooLong) {
			s.fail(err)
			// Keep draining so the server is not blocked writing to a
			// pipe nobody reads before it is killed.
			_, _ = io.Copy(io.Discard, r)
			close(done)
			return
		}
		close(done)
		settle := time.NewTimer(eofSettle)
		defer settle.Stop()
		select {
		case <-s.done:
		case <-settle.C:
			s.fail(ErrStdoutClosed)
		}
		return
	}
}

// passStderr hands each stderr line to cfg.Stderr, cut at maxStderrLine.
// A line longer than maxStderrStream ends it: that line and the rest of
// the stream are drained, so that the server never blocks on a full
// pipe, and not passed on.
func (s *Session) passStderr(r *os.File, done chan<- struct{}) {
	defer close(done)
	defer r.Close()
	lines := newStderrLines(r, maxStderrLine, maxStderrStream)
	for {
		line, cut, err := lines.next()
		if errors.Is(err, errStderrLineTooLong) {
			s.log.Warn("Las wrote a stderr line longer than 1 MiB: the rest of its stderr is not logged", "pid", s.proc.pid)
			_, _ = io.Copy(io.Discard, lines.r)
			return
		}
		if len(line) > 0 || cut || err == nil {
			text := string(line)
			if cut {
				text += "…"
			}
			if s.cfg.Stderr != nil {
				s.cfg.Stderr(s.proc.pid, text)
			}
		}
		if err != nil {
			return
		}
	}
}

// stderrLines splits a stream into lines of at most max bytes, dropping
// (and flagging) the rest of longer ones, in bounded memory. A line of
// more than stop bytes, its line end excluded, ends the stream.
type stderrLines struct {
	r    *bufio.Reader
	max  int
	stop int
}

func newStderrLines(r io.Reader, max, stop int) *stderrLines {
	return &stderrLines{r: bufio.NewReaderSize(r, 16<<10), max: max, stop: stop}
}

// next returns the next line without its newline, whether it was cut,
// and the read error that ended the stream (the last line may come with
// it). A line longer than stop is errStderrLineTooLong, without the line,
// once stop bytes of it are read: the rest of the stream is l.r's.
func (l *stderrLines) next() (line []byte, cut bool, err error) {
	n := 0 // bytes of the line read so far
	for {
		chunk, err := l.r.ReadSlice('\n')
		n += len(chunk)
		if err == nil {
			n -= len(chunk) - len(bytes.TrimSuffix(bytes.TrimSuffix(chunk, []byte("\n")), []byte("\r")))
		}
		if n > l.stop {
			return nil, false, errStderrLineTooLong
		}
		if err == nil {
			// The line end is no part of the line: a line of exactly
			// max bytes is whole.
			chunk = bytes.TrimSuffix(bytes.TrimSuffix(chunk, []byte("\n")), []byte("\r"))
		}
		if room := l.max - len(line); room > 0 {
			take := chunk
			if len(take) > room {
				take = take[:room]
				cut = true
			}
			line = append(line, take...)
		} else if len(chunk) > 0 {
			cut = true
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\r")), cut, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return bytes.TrimRight(line, "\r\n"), cut, err
		}
	}
}

// writeStdin drains the frame queue into stdin; when the queue is closed
// it closes stdin, which is the first rung of the shutdown ladder.
func (s *Session) writeStdin(w *os.File) {
	defer w.Close()
	for frame := range s.writes {
		if _, err := w.Write(frame); err != nil {
			s.fail(&WriteError{Err: err})
			for range s.writes { // discard the rest until the queue is closed
			}
			return
		}
	}
}

// wait reaps the process and reports its exit after its last stdout
// lines and stderr lines are through (or a bound passed: a grandchild
// may hold the pipes open), so that what the server said before it
// crashed is handled before the crash.
func (s *Session) wait(readerDone, stderrDone <-chan struct{}) {
	err := s.proc.cmd.Wait()
	close(s.proc.done)
	// Its group's stragglers are killed by Close or Kill; what left the
	// group and was reparented here goes then (docs/las.md#leftovers).
	untrackGroup(s.proc.pid)
	bound := time.NewTimer(exitAfterStdout)
	defer bound.Stop()
	status := "exit status 0"
	if err != nil {
		status = err.Error()
	}
	for _, ch := range []<-chan struct{}{readerDone, stderrDone} {
		select {
		case <-ch:
		case <-bound.C:
			s.fail(&ExitError{Status: status})
			return
		}
	}
	s.fail(&ExitError{Status: status})
}

// write queues one frame for stdin without blocking. A full queue ends
// the session.
func (s *Session) write(frame []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.stdinClosed {
		return s.failure()
	}
	select {
	case s.writes <- frame:
		return nil
	default:
		return s.fail(&WriteError{Err: fmt.Errorf("Las is not reading its stdin (%d frames queued)", WriteQueue)})
	}
}

// closeStdin ends the write queue; the writer closes stdin once the
// frames queued before are written.
func (s *Session) closeStdin() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !s.stdinClosed {
		s.stdinClosed = true
		close(s.writes)
	}
}

// signalGroup sends sig to the whole process group the server leads, so
// that its own children get it too.
func (p *process) signalGroup(sig syscall.Signal) { _ = syscall.Kill(-p.pid, sig) }

// exited reports whether the process is reaped within d.
func (p *process) exited(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// shutdown is the ladder of a clean stop (docs/las.md#shutdown-ladder):
// close stdin and give the server the grace to finish and exit by
// itself; then SIGTERM the group and wait a little; then SIGKILL.
// Whatever is left of its group after the leader exits is killed too, so
// no process of this server outlives the session.
func (s *Session) shutdown() {
	p := s.proc
	s.closeStdin() // an MCP server's signal to finish: EOF on stdin
	if !p.exited(s.cfg.ShutdownGrace) {
		p.signalGroup(syscall.SIGTERM) // it did not go by itself: ask it to
		if !p.exited(s.cfg.TermGrace) {
			p.signalGroup(syscall.SIGKILL) // it ignores us: end it
			p.exited(killWait)
			reapLeftovers()
			return
		}
	}
	p.signalGroup(syscall.SIGKILL) // stragglers it left in its group
	reapLeftovers()                // and those that left it (setsid), reparented to us
}

// kill ends a server whose session has failed: there is nothing to wait
// for, so no grace.
func (s *Session) kill() {
	s.closeStdin()
	s.proc.signalGroup(syscall.SIGKILL)
	s.proc.exited(killWait)
	reapLeftovers()
}
