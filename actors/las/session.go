package las

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/wisent/singularity/internal/keeper"
	"github.com/wisent/singularity/internal/mcpremote"
	"github.com/wisent/singularity/internal/mcpstdio"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/mcpwire"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/supervision/fault"
)

// session is one MCP session with one server: a child process on stdio
// (mcpstdio) or a remote server over streamable HTTP (mcpremote). The Las
// actor drives either the same way. Every method is safe to call from
// any goroutine; the waits return when their context ends or the session
// ends, whichever comes first, except that an answer the session read
// before its end is still returned.
//
// Each request is sent at once, in the order the methods are called
// (over HTTP, as the transport allows), and its method returns a
// function that waits for the answer; that function must be called,
// once, and may be called on another goroutine.
type session interface {
	// Initialize runs the handshake (docs/las.md#handshake). An error
	// answer is a *mcpwire.RPCError, another protocol version
	// mcpwire.ErrUnsupportedVersion, no answer within the MCP deadline
	// context.DeadlineExceeded.
	Initialize(ctx context.Context) (wait func() error)
	// ListTools reads every page of tools/list and returns the tools in
	// server order. No answer within the MCP deadline is
	// context.DeadlineExceeded.
	ListTools(ctx context.Context) (wait func() ([]chat.Tool, error))
	// CallTool sends tools/call and returns the outcome the answer
	// means (docs/las.md#calls-and-deadlines). When ctx ends first the
	// server is told the request is cancelled and ctx's error returned.
	CallTool(ctx context.Context, name string, args json.RawMessage) (wait func() (outcome.Outcome, error))
	// Ping sends ping and waits for the answer until ctx ends.
	Ping(ctx context.Context) (wait func() error)
	// Done is closed when the session has ended; Err then says why
	// (nil before).
	Done() <-chan struct{}
	Err() error
	// Close ends the session with cause the clean way (for a process,
	// the shutdown ladder) and returns once it has ended; Kill ends a
	// failed one at once. Requests still waiting return cause.
	Close(cause error)
	Kill(cause error)
	// PID is the server's process id, 0 for a remote server.
	PID() int
}

var (
	_ session = (*mcpstdio.Session)(nil)
	_ session = (*mcpremote.Session)(nil)
)

// errShuttingDown is the cause of a session its actor stops; the calls
// still waiting are answered "Las is shutting down".
var errShuttingDown = errors.New("Las is shutting down")

// errRestarting is the cause of a session its actor is restarted under
// without having failed itself (an unexpected panic).
var errRestarting = fault.Upstream(fault.ClassMCP, fault.Transient, "Las actor restarted")

// open starts the session of o; listChanged is called for each
// notifications/tools/list_changed. A stdio server is spawned now: an
// error is the permanent failure of docs/las.md#spawn.
func open(o Options, listChanged func()) (session, error) {
	if o.server != nil && o.server.URL != "" {
		return mcpremote.New(mcpremote.Config{
			URL:           o.server.URL,
			Headers:       o.server.Headers,
			ClientVersion: o.ClientVersion,
			AgentID:       o.AgentID,
			Timeout:       o.CallTimeout,
			Redact:        o.Secrets.RedactString,
			ListChanged:   listChanged,
			MaxReplyBytes: o.MaxLineBytes,
		}), nil
	}
	env, err := environment(o)
	if err != nil {
		return nil, err
	}
	cfg := mcpstdio.Config{
		Path:          o.Command,
		Env:           env,
		DeathSignal:   syscall.SIGKILL,
		ClientVersion: o.ClientVersion,
		AgentID:       o.AgentID,
		Workspace:     o.Workspace,
		Timeout:       o.CallTimeout,
		MaxLineBytes:  o.MaxLineBytes,
		ShutdownGrace: o.ShutdownGrace,
		TermGrace:     o.TermGrace,
		Logger:        o.Logger.With("actor", "las", "being", o.BeingName, "agent_id", o.AgentID),
		ListChanged:   listChanged,
	}
	if o.Entrypoint != "" {
		cfg.Args = []string{o.Entrypoint}
	}
	if o.server != nil {
		cfg.Path, cfg.Args, cfg.Dir = o.server.Command, o.server.Args, o.server.Dir
		cfg.Logger = cfg.Logger.With("server", o.server.Name)
	}
	if o.Keeper != "" {
		// The keeper runs Las with SIGKILL as its parent-death signal
		// and ends the rest of its tree when this process dies
		// (docs/las.md#leftovers).
		cfg.Args = append([]string{keeper.Command, strconv.Itoa(os.Getpid()), cfg.Path}, cfg.Args...)
		cfg.Path, cfg.DeathSignal, cfg.Keeper = o.Keeper, keeper.DeathSignal, true
	}
	prefix, log, secrets := o.stderrPrefix(), o.Logger, o.Secrets
	observe := o.OnStderr
	cfg.Stderr = func(pid int, line string) {
		line = secrets.RedactString(line)
		log.Info(prefix+line, "pid", pid)
		if observe != nil {
			observe(line)
		}
	}
	s, err := mcpstdio.Start(cfg)
	if err != nil {
		if o.server != nil {
			return nil, fault.Upstream(fault.ClassMCP, fault.Permanent, "cannot start Las %s: %w", o.server.Name, err)
		}
		return nil, fault.Upstream(fault.ClassMCP, fault.Permanent, "cannot start Las: %w", err)
	}
	return s, nil
}

// classify turns why a session ended into the failure of
// docs/las.md#supervision its actor fails with. The actor's own causes
// are classified already and are returned as they are.
func classify(err error, redact func(string) string) error {
	var (
		classified *fault.Error
		exit       *mcpstdio.ExitError
		write      *mcpstdio.WriteError
	)
	switch {
	case errors.As(err, &classified):
		return err
	case errors.As(err, &exit):
		return fault.Upstream(fault.ClassMCP, fault.Transient, "%w (%s)", supervision.ErrLasExited, exit.Status)
	case errors.Is(err, mcpstdio.ErrStdoutClosed):
		return fault.Upstream(fault.ClassMCP, fault.Transient, "%w", supervision.ErrLasStdoutClosed)
	case errors.As(err, &write):
		return fault.Upstream(fault.ClassMCP, fault.Transient, "%w: %w", supervision.ErrLasStdinWrite, write.Err)
	case errors.Is(err, mcpwire.ErrLineTooLong):
		return fault.Upstream(fault.ClassMCP, fault.Transient, "%w: %w", supervision.ErrLasLineTooLong, err)
	case errors.Is(err, mcpremote.ErrCrossOriginRedirect):
		// A configuration to fix: restarting would only be redirected
		// again.
		return fault.Upstream(fault.ClassMCP, fault.Permanent, "Las: %s", redact(err.Error()))
	default: // a remote connection that failed
		return fault.Upstream(fault.ClassMCP, fault.Transient, "%w: %s", supervision.ErrLasUnresponsive, redact(err.Error()))
	}
}

// listFailure is the sentence of a listing that failed with an answer
// (docs/las.md#handshake): an error answer or a malformed page.
func listFailure(err error, redact func(string) string) string {
	var rpc *mcpwire.RPCError
	switch {
	case errors.As(err, &rpc):
		return "Las tools/list failed: " + redact(rpc.Message)
	case errors.Is(err, mcpstdio.ErrMalformedList):
		return "Las tools/list answer is malformed"
	default:
		return "Las tools/list failed: " + redact(err.Error())
	}
}

// initializeFailure is the failure of a handshake that did not end with
// the session (docs/las.md#handshake).
func initializeFailure(err error, o Options) error {
	var rpc *mcpwire.RPCError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		// Our own sentence (docs/las.md#las-at-boot), still a transient
		// failure that is restarted like any other.
		return &fault.Error{Class: fault.ClassMCP, Kind: fault.Transient, Err: supervision.ErrLasUnresponsive,
			Msg: fmt.Sprintf("Las did not answer initialize within %s s", seconds(o.CallTimeout))}
	case errors.As(err, &rpc):
		return fault.Upstream(fault.ClassMCP, fault.Permanent, "Las refused initialize: %s", rpc.Message)
	case errors.Is(err, mcpwire.ErrUnsupportedVersion):
		return fault.Upstream(fault.ClassMCP, fault.Permanent, "Las negotiated an unsupported MCP version")
	case errors.Is(err, mcpremote.ErrCrossOriginRedirect):
		return fault.Upstream(fault.ClassMCP, fault.Permanent, "Las: %s", o.Secrets.RedactString(err.Error()))
	default: // a remote server that cannot be reached
		return fault.Upstream(fault.ClassMCP, fault.Transient, "%w: %s", supervision.ErrLasExited, o.Secrets.RedactString(err.Error()))
	}
}
