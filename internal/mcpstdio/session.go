// Package mcpstdio is the MCP client of a server that runs as a child
// process and speaks JSON-RPC on its stdin and stdout, one message a
// line: a Las (docs/las.md).
//
// Start runs the process in a process group of its own. Its goroutines
// read stdout, drain a bounded write queue into stdin, pass stderr on
// line by line and reap the process; none of them blocks on the caller.
// The session follows the framing rules of
// docs/las.md#framing-robustness: blank lines and lines that are not
// JSON-RPC are skipped, messages are classified by their shape and never
// by their id, answers are matched to requests by id in any order, the
// server's own requests are answered (roots/list with the workspace, any
// other with -32601) and a line over the limit ends the session.
//
// A session ends once, for the first of these reasons, which Err
// returns: the process exited (*ExitError), stdout closed
// (ErrStdoutClosed), a line was too long (mcpwire.ErrLineTooLong), a
// write failed or the write queue was full (*WriteError), or the caller
// closed or killed it (the cause it gave). Requests waiting then return
// that reason, except that an answer read before the end is still
// returned.
package mcpstdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/mcpwire"
)

// Config says how to start a server and talk to it.
type Config struct {
	// Path is the executable; Args its arguments.
	Path string
	Args []string
	// Env is the whole environment of the process: nothing is inherited.
	Env []string
	// Dir is the working directory; "" is this process's.
	Dir string
	// DeathSignal is the process's parent-death signal; 0 is none.
	DeathSignal syscall.Signal
	// Keeper reports that Path is a Las keeper (keeper.Run) starting the
	// server: Start then waits for the keeper's start report, and a
	// server the keeper cannot execute is Start's error, as it is
	// without a keeper, rather than an exit of the keeper.
	Keeper bool

	// ClientVersion and AgentID go into initialize.
	ClientVersion string
	AgentID       string
	// Workspace, when set, is the one root answered to roots/list, and
	// the roots capability is declared; "" refuses roots/list like any
	// other request.
	Workspace string
	// Timeout bounds each request of Initialize and each page of
	// ListTools.
	Timeout time.Duration
	// MaxLineBytes bounds one line from the server; zero means
	// mcpwire.MaxLineBytes.
	MaxLineBytes int
	// ShutdownGrace and TermGrace are the waits of Close's ladder after
	// stdin is closed and after SIGTERM.
	ShutdownGrace time.Duration
	TermGrace     time.Duration

	// Logger receives what the session skips or refuses (the size of a
	// line, never its content); nil discards.
	Logger *slog.Logger
	// Stderr, when set, receives each line the process writes on stderr,
	// cut at 64 KiB with "…". After a line longer than 1 MiB it receives
	// nothing more: Logger gets one warning and the stream is drained.
	Stderr func(pid int, line string)
	// ListChanged, when set, is called for each
	// notifications/tools/list_changed, on the reading goroutine, in the
	// order of the lines: it must not block.
	ListChanged func()
}

// ErrStdoutClosed ends a session whose server closed its stdout without
// exiting.
var ErrStdoutClosed = errors.New("stdout closed")

// ErrMalformedList reports a tools/list page that cannot be decoded.
var ErrMalformedList = errors.New("tools/list answer is malformed")

// ExitError ends a session whose process exited.
type ExitError struct {
	Status string // as exec.Cmd.Wait reports it, "exit status 0" for none
}

func (e *ExitError) Error() string { return "process exited (" + e.Status + ")" }

// WriteError ends a session whose write to stdin failed, or whose write
// queue was full.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "write to stdin failed: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// Session is one MCP session with one server process. Its methods are
// safe for concurrent use.
type Session struct {
	cfg  Config
	log  *slog.Logger
	proc *process

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan mcpwire.Message

	wmu         sync.Mutex
	writes      chan []byte
	stdinClosed bool

	end  sync.Once
	err  error
	done chan struct{}
}

// Start spawns the server and returns its session; the handshake is
// Initialize. An error is the operating system's: the process did not
// start.
func Start(cfg Config) (*Session, error) {
	if cfg.MaxLineBytes <= 0 {
		cfg.MaxLineBytes = mcpwire.MaxLineBytes
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Session{
		cfg:     cfg,
		log:     log,
		pending: map[int64]chan mcpwire.Message{},
		writes:  make(chan []byte, WriteQueue),
		done:    make(chan struct{}),
	}
	if err := s.spawn(); err != nil {
		return nil, err
	}
	return s, nil
}

// PID is the process id of the server.
func (s *Session) PID() int { return s.proc.pid }

// Done is closed when the session has ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is nil while the session is up, and why it ended once Done is
// closed.
func (s *Session) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// failure is Err for callers that know the session has ended.
func (s *Session) failure() error {
	<-s.done
	return s.err
}

// fail ends the session with err unless it has ended already, and
// returns the reason it ended with.
func (s *Session) fail(err error) error {
	s.end.Do(func() {
		s.err = err
		close(s.done)
	})
	return s.err
}

// Close ends the session with cause and stops the server with the
// shutdown ladder of docs/las.md#shutdown-ladder; it returns once the
// process is gone. Requests still waiting return cause.
func (s *Session) Close(cause error) {
	s.fail(cause)
	s.shutdown()
}

// Kill ends the session with cause and SIGKILLs the server's process
// group at once, for a session that has failed.
func (s *Session) Kill(cause error) {
	s.fail(cause)
	s.kill()
}

// The requests below are sent at once, in the order their methods are
// called, and each method returns a function that waits for the answer;
// that function must be called, once.

// Initialize sends initialize; its wait checks the answer and then
// sends notifications/initialized (docs/las.md#handshake). An error
// answer is returned as a *mcpwire.RPCError, another protocol version as
// mcpwire.ErrUnsupportedVersion, no answer within Config.Timeout as
// context.DeadlineExceeded.
func (s *Session) Initialize(ctx context.Context) (wait func() error) {
	params := mcpwire.NewInitializeParams(s.cfg.ClientVersion, s.cfg.AgentID)
	if s.cfg.Workspace != "" {
		params = params.WithRoots()
	}
	c, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	_, answer := s.send(c, mcpwire.MethodInitialize, params)
	return func() error {
		defer cancel()
		msg, err := answer()
		if err != nil {
			return fmt.Errorf("initialize: %w", err)
		}
		if msg.Error != nil {
			return fmt.Errorf("initialize: %w", msg.Error)
		}
		if err := mcpwire.CheckInitialize(msg.Result); err != nil {
			return err
		}
		return s.notify(mcpwire.MethodInitialized, nil)
	}
}

// ListTools sends the first tools/list; its wait reads every page, each
// within Config.Timeout, and returns the tools in server order. An error
// answer is returned as a *mcpwire.RPCError, an undecodable page as
// ErrMalformedList, a page without an answer in time as
// context.DeadlineExceeded.
func (s *Session) ListTools(ctx context.Context) (wait func() ([]chat.Tool, error)) {
	c, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	_, answer := s.send(c, mcpwire.MethodToolsList, nil)
	return func() ([]chat.Tool, error) {
		var tools []chat.Tool
		for {
			msg, err := answer()
			cancel()
			if err != nil {
				return nil, fmt.Errorf("tools/list: %w", err)
			}
			if msg.Error != nil {
				return nil, fmt.Errorf("tools/list: %w", msg.Error)
			}
			page, err := mcpwire.ParseToolsPage(msg.Result)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrMalformedList, err)
			}
			tools = append(tools, page.Tools...)
			if page.NextCursor == "" {
				return tools, nil
			}
			c, cancel = context.WithTimeout(ctx, s.cfg.Timeout)
			_, answer = s.send(c, mcpwire.MethodToolsList, mcpwire.ListParams{Cursor: page.NextCursor})
		}
	}
}

// CallTool sends tools/call; its wait returns the call's outcome as
// docs/las.md#calls-and-deadlines reads the answer. When ctx ends first
// it sends notifications/cancelled for the request and returns ctx's
// error; when the session ends first, its reason.
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage) (wait func() (outcome.Outcome, error)) {
	id, answer := s.send(ctx, mcpwire.MethodToolsCall, mcpwire.CallParams{Name: name, Arguments: args})
	return func() (outcome.Outcome, error) {
		msg, err := answer()
		if err != nil {
			if id != 0 && ctx.Err() != nil && s.Err() == nil {
				reason := "cancelled"
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					reason = "deadline exceeded"
				}
				_ = s.notify(mcpwire.MethodCancelled, mcpwire.CancelledParams{RequestID: id, Reason: reason})
			}
			return outcome.Outcome{}, err
		}
		return mcpwire.CallOutcome(msg), nil
	}
}

// Ping sends ping; its wait returns once the answer came or ctx ended.
// An error answer is returned as a *mcpwire.RPCError.
func (s *Session) Ping(ctx context.Context) (wait func() error) {
	_, answer := s.send(ctx, mcpwire.MethodPing, nil)
	return func() error {
		msg, err := answer()
		if err != nil {
			return err
		}
		if msg.Error != nil {
			return msg.Error
		}
		return nil
	}
}

// send queues one request and returns its id (0 when it could not be
// queued) and a function that waits for its answer, ctx's end or the
// session's. An answer read before either is returned all the same.
func (s *Session) send(ctx context.Context, method string, params any) (int64, func() (mcpwire.Message, error)) {
	if err := s.Err(); err != nil {
		return 0, func() (mcpwire.Message, error) { return mcpwire.Message{}, err }
	}
	answer := make(chan mcpwire.Message, 1)
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.pending[id] = answer
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}

	frame, err := mcpwire.Request(id, method, params)
	if err == nil {
		err = s.write(frame)
	}
	if err != nil {
		forget()
		return 0, func() (mcpwire.Message, error) { return mcpwire.Message{}, err }
	}
	return id, func() (mcpwire.Message, error) {
		defer forget()
		select {
		case msg := <-answer:
			return msg, nil
		case <-s.done:
		case <-ctx.Done():
		}
		select {
		case msg := <-answer:
			return msg, nil
		default:
		}
		if err := s.Err(); err != nil {
			return mcpwire.Message{}, err
		}
		return mcpwire.Message{}, ctx.Err()
	}
}

func (s *Session) notify(method string, params any) error {
	frame, err := mcpwire.Notification(method, params)
	if err != nil {
		return err
	}
	return s.write(frame)
}

// handleLine applies the framing rules to one line from stdout.
func (s *Session) handleLine(line []byte) {
	if mcpwire.IsBlank(line) {
		return
	}
	msg, err := mcpwire.Classify(line)
	if err != nil {
		// The line itself may hold anything; log its size only.
		s.log.Warn("skipped a line from Las that is not JSON-RPC", "bytes", len(line))
		return
	}
	switch msg.Kind {
	case mcpwire.KindNotification:
		if msg.Method == mcpwire.MethodToolsListChanged && s.cfg.ListChanged != nil {
			s.cfg.ListChanged()
		}
	case mcpwire.KindRequest:
		if msg.Method == mcpwire.MethodRootsList && s.cfg.Workspace != "" {
			_ = s.write(mcpwire.RootsAnswer(msg.ID, s.cfg.Workspace, "workspace"))
			return
		}
		s.log.Info("refused a request from Las", "method", msg.Method)
		_ = s.write(mcpwire.MethodNotFound(msg.ID, msg.Method))
	case mcpwire.KindResponse:
		id, ok := msg.IntID()
		s.mu.Lock()
		answer := s.pending[id]
		delete(s.pending, id)
		s.mu.Unlock()
		if !ok || answer == nil {
			s.log.Warn("dropped a response with an unknown id", "id", string(msg.ID))
			return
		}
		answer <- msg
	}
}
