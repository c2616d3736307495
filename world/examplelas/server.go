// Package examplelas is a small but real Las: an MCP server over stdio
// built on the official MCP Go SDK. It offers a few surfaces — finance
// (results carry revenue_usd, as the demo world needs), echo, skarbiec —
// and a chaos surface of fault injection that the Las client's tests use:
// exiting mid-call, freezing, junk lines, server-to-client requests,
// list_changed, secret-shaped output, its own environment, and a
// per-call delivery record so tests can assert exactly-once delivery.
//
// Everything it returns is simulated; no money moves.
package examplelas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config is the example Las's behaviour, read from the JSON file given as
// its only argument (the Las "entrypoint"). The zero value is a plain,
// well-behaved server.
type Config struct {
	// DeliveriesFile, when set, receives one line per delivered chaos call
	// ("call <tool> <key>"), per cancellation received ("cancelled <id>"),
	// per answer to its own requests ("answered <id> <code>") and the pid
	// of a grandchild ("grandchild <pid>").
	DeliveriesFile string `json:"deliveries_file,omitempty"`
	// ExitOnStart makes the process exit with status 1 at once (a crash
	// loop).
	ExitOnStart bool `json:"exit_on_start,omitempty"`
	// ProtocolVersion, when set, answers initialize with this version
	// instead of letting the SDK negotiate.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// HangOnInitialize swallows initialize: the server never answers it.
	HangOnInitialize bool `json:"hang_on_initialize,omitempty"`
	// StderrLineBytes, when positive, writes one stderr line of that many
	// bytes at start, then the line "examplelas: after the long line".
	StderrLineBytes int `json:"stderr_line_bytes,omitempty"`
	// IgnoreStdinClose keeps the server alive after stdin closes.
	IgnoreStdinClose bool `json:"ignore_stdin_close,omitempty"`
	// IgnoreSIGTERM ignores SIGTERM, so only SIGKILL ends the process.
	IgnoreSIGTERM bool `json:"ignore_sigterm,omitempty"`
	// Grandchild starts a long sleep in the server's process group.
	Grandchild bool `json:"grandchild,omitempty"`
	// RecordPID records "las <pid>" of this process at start.
	RecordPID bool `json:"record_pid,omitempty"`
	// SetsidGrandchild starts the grandchild in a session of its own, out
	// of the server's process group.
	SetsidGrandchild bool `json:"setsid_grandchild,omitempty"`
	// PageSize is the tools/list page size; zero means 4, so listing
	// always spans several pages.
	PageSize int `json:"page_size,omitempty"`
	// Surfaces limits the offered surfaces; empty means all of finance,
	// echo, skarbiec, chaos.
	Surfaces []string `json:"surfaces,omitempty"`
	// CPUProfile, when set, is a file that receives a CPU profile of the
	// whole life of the process (go tool pprof), written when it ends
	// by its stdin closing: the server half of a round trip. Only a
	// binary built with -tags examplelas_pprof profiles; any other
	// refuses to start with it (exit 2).
	CPUProfile string `json:"cpu_profile,omitempty"`
}

// LoadConfig reads a Config from a JSON file.
func LoadConfig(path string) (Config, error) {
	var cfg Config
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("read example Las config: %w", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return cfg, nil
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("parse example Las config %s: %w", path, err)
	}
	return cfg, nil
}

// Main runs the example Las as a process: args[0], when present, is the
// config file. It returns the exit status.
func Main(args []string) int {
	var cfg Config
	if len(args) > 0 && args[0] != "" {
		var err error
		if cfg, err = LoadConfig(args[0]); err != nil {
			fmt.Fprintln(os.Stderr, "examplelas:", err)
			return 2
		}
	}
	if cfg.ExitOnStart {
		fmt.Fprintln(os.Stderr, "examplelas: exiting at start as configured")
		return 1
	}
	if cfg.IgnoreSIGTERM {
		signal.Ignore(syscall.SIGTERM)
	}
	if cfg.StderrLineBytes > 0 {
		fmt.Fprintln(os.Stderr, strings.Repeat("x", cfg.StderrLineBytes))
		fmt.Fprintln(os.Stderr, "examplelas: after the long line")
	}
	if cfg.CPUProfile != "" {
		stop, err := startCPUProfile(cfg.CPUProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "examplelas:", err)
			return 2
		}
		defer stop()
	}
	tune(os.Getenv)
	if err := Run(context.Background(), cfg, pollable(os.Stdin), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "examplelas:", err)
		return 1
	}
	return 0
}

// Run serves MCP on in/out until in closes (or forever with
// IgnoreStdinClose).
func Run(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	s := &server{cfg: cfg, out: &lockedWriter{w: out}}
	if cfg.RecordPID {
		s.record(fmt.Sprintf("las %d", os.Getpid()))
	}
	if cfg.Grandchild {
		if err := s.startGrandchild(); err != nil {
			return err
		}
	}
	pageSize := cfg.PageSize
	if pageSize <= 0 {
		pageSize = 4
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "example-las", Version: "1.0.0"}, &mcp.ServerOptions{PageSize: pageSize})
	s.addTools()

	err := s.mcp.Run(ctx, &lineTransport{s: s, in: in})
	if cfg.IgnoreStdinClose {
		select {} // stay alive until signalled, as a misbehaving server would
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

type server struct {
	cfg Config
	mcp *mcp.Server
	out *lockedWriter

	recordMu sync.Mutex
	// badList makes the next tools/list answer a list that breaks the
	// catalogue's rules (chaos__list_bad).
	badList atomic.Bool
}

// lockedWriter is stdout shared by the SDK transport and the raw chaos
// writes; every Write is one whole line. Holding mu forever freezes the
// server's output (chaos__freeze).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// line writes b and a newline as one Write.
func (l *lockedWriter) line(b []byte) error {
	_, err := l.Write(append(b, '\n'))
	return err
}

func (l *lockedWriter) raw(lines ...string) {
	for _, line := range lines {
		_ = l.line([]byte(line))
	}
}

// intercept sees every message from the client before the SDK does: it
// records what the tests need to see (cancellations, answers to our own
// requests), answers initialize itself when a fake protocol version is
// configured, and reports whether the message is swallowed.
func (s *server) intercept(m wireMessage) bool {
	method := ""
	if m.Method != nil {
		method = *m.Method
	}
	switch {
	case method == "initialize" && s.cfg.HangOnInitialize:
		return true
	case method == "initialize" && s.cfg.ProtocolVersion != "":
		s.out.raw(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"example-las","version":"1.0.0"}}}`, m.ID, s.cfg.ProtocolVersion))
		return true
	case method == "tools/list" && s.badList.CompareAndSwap(true, false):
		s.out.raw(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"bad name!","inputSchema":{"type":"object"}}]}}`, m.ID))
		return true
	case method == "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		s.record("cancelled " + string(p.RequestID))
	case m.Method == nil && isChaosID(string(m.ID)):
		code := int64(0)
		if m.Error != nil {
			code = m.Error.Code
		}
		s.record(fmt.Sprintf("answered %s %d", m.ID, code))
		return true
	}
	return false
}

func isChaosID(id string) bool {
	for _, c := range chaosIDs {
		if id == c {
			return true
		}
	}
	return false
}

// record appends one line to the deliveries file and syncs it, so a line
// written before a crash is still there.
func (s *server) record(line string) {
	if s.cfg.DeliveriesFile == "" {
		return
	}
	s.recordMu.Lock()
	defer s.recordMu.Unlock()
	f, err := os.OpenFile(s.cfg.DeliveriesFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "examplelas: record:", err)
		return
	}
	defer f.Close()
	_, _ = f.WriteString(line + "\n")
	_ = f.Sync()
}

func (s *server) startGrandchild() error {
	cmd := exec.Command("sleep", "600")
	if s.cfg.SetsidGrandchild {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start grandchild: %w", err)
	}
	s.record(fmt.Sprintf("grandchild %d", cmd.Process.Pid))
	go func() { _ = cmd.Wait() }()
	return nil
}

func (s *server) offers(surface string) bool {
	if len(s.cfg.Surfaces) == 0 {
		return true
	}
	for _, v := range s.cfg.Surfaces {
		if v == surface {
			return true
		}
	}
	return false
}

// environment returns the process environment, sorted.
func environment() []string {
	env := os.Environ()
	sort.Strings(env)
	return env
}

// sleepFor waits ms milliseconds; false when ctx ended first.
func sleepFor(ctx context.Context, ms int) bool {
	if ms <= 0 {
		return true
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
