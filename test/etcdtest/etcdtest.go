// Package etcdtest runs a real etcd for tests: the etcd binary on the
// PATH (Debian's etcd-server; .ci/run installs it), one member on
// loopback with free client and peer ports and a data directory under
// t.TempDir, stopped when the test ends.
//
// Its contract:
//
//   - Start returns only once the server answers a read, or fails the
//     test with the tail of etcd's log; without an etcd binary it skips
//     the test, saying why.
//   - A test takes etcd away on purpose: Stop (SIGTERM, waited for),
//     Kill (SIGKILL), Pause (SIGSTOP, the server frozen with its ports
//     open) and Resume; Restart starts it again on the same data
//     directory and ports, so what was committed is still there.
//   - Launch runs the same etcd outside a test, for a runnable example:
//     it answers ErrNotInstalled without a binary, and Close ends it.
//   - Nothing here sleeps: readiness is a read with a deadline, retried
//     by the etcd client itself, raced against the process's exit.
package etcdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ReadyTimeout bounds how long Start and Restart wait for etcd to answer.
const ReadyTimeout = 30 * time.Second

// Server is one etcd member run by a test.
type Server struct {
	t       testing.TB
	bin     string
	dir     string
	client  string // the client URL
	peer    string // the peer URL
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
	paused bool
}

// Binary returns the path of the etcd binary, or "" when none is
// installed.
func Binary() string {
	if path, err := exec.LookPath("etcd"); err == nil {
		return path
	}
	return ""
}

// Start runs etcd for t and waits until it answers; the test's cleanup
// stops it. Without an etcd binary the test is skipped.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip(notInstalled)
	}
	dir := t.TempDir()
	s := &Server{t: t, bin: bin, dir: dir, logPath: filepath.Join(dir, "etcd.log")}
	t.Cleanup(s.cleanup)
	if err := s.startOnFreePorts(); err != nil {
		t.Fatalf("etcdtest: %v\n%s", err, s.logTail())
	}
	return s
}

// notInstalled is why a test without etcd is skipped.
const notInstalled = "etcd is not installed (Debian's etcd-server; .ci/run installs it)"

// ErrNotInstalled is Launch's error without an etcd binary.
var ErrNotInstalled = errors.New(notInstalled)

// Launch runs etcd outside a test, for a runnable example: its data
// directory is made under the system's temporary directory, and Close
// stops etcd and removes it. Only Endpoints and Close are for a launched
// server. Without an etcd binary it returns ErrNotInstalled; the package
// of the example skips it then (its TestMain, with -test.skip).
func Launch() (*Server, error) {
	bin := Binary()
	if bin == "" {
		return nil, ErrNotInstalled
	}
	dir, err := os.MkdirTemp("", "etcdtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, logPath: filepath.Join(dir, "etcd.log")}
	if err := s.startOnFreePorts(); err != nil {
		err = fmt.Errorf("etcdtest: %w\n%s", err, s.logTail())
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Close stops a launched etcd and removes its data directory.
func (s *Server) Close() {
	s.end(syscall.SIGKILL)
	_ = os.RemoveAll(s.dir)
}

// startOnFreePorts starts etcd on two free ports. A port found free may
// be taken by another process before etcd binds it: a start that fails
// is tried again on new ports.
func (s *Server) startOnFreePorts() error {
	var err error
	for range 3 {
		var client, peer string
		if client, err = freeAddr(); err != nil {
			return err
		}
		if peer, err = freeAddr(); err != nil {
			return err
		}
		s.client, s.peer = "http://"+client, "http://"+peer
		if err = s.start(); err == nil {
			return nil
		}
	}
	return err
}

// LogPath is the file etcd logs to, in the test's temporary directory.
func (s *Server) LogPath() string { return s.logPath }

// Endpoints is what a client dials.
func (s *Server) Endpoints() []string { return []string{s.client} }

// Client returns a client of the server of its own, closed when the test
// ends: the test's view of etcd beside the code under test.
func (s *Server) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop ends etcd with SIGTERM and waits for it to exit.
func (s *Server) Stop() { s.end(syscall.SIGTERM) }

// Kill ends etcd with SIGKILL and waits for it to exit.
func (s *Server) Kill() { s.end(syscall.SIGKILL) }

// Pause freezes etcd with SIGSTOP: its ports stay open and nothing
// answers.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP, true) }

// Resume lets a paused etcd go on with SIGCONT.
func (s *Server) Resume() { s.signal(syscall.SIGCONT, false) }

// Restart starts a stopped etcd again on the same data directory and
// ports and waits until it answers.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	running := s.cmd != nil
	s.mu.Unlock()
	if running {
		s.t.Fatalf("etcdtest: Restart of an etcd that still runs")
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("etcdtest: restart: %v\n%s", err, s.logTail())
	}
}

// start runs the binary and waits until it answers a read.
func (s *Server) start() error {
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(s.bin,
		"--name", "etcdtest",
		"--data-dir", filepath.Join(s.dir, "data"),
		"--listen-client-urls", s.client,
		"--advertise-client-urls", s.client,
		"--listen-peer-urls", s.peer,
		"--initial-advertise-peer-urls", s.peer,
		"--initial-cluster", "etcdtest="+s.peer,
		"--logger", "zap",
		"--log-outputs", "stderr",
	)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited, s.paused = cmd, exited, false
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := s.ready(ctx); err != nil {
		select {
		case <-exited:
			s.mu.Lock()
			s.cmd = nil
			s.mu.Unlock()
			return fmt.Errorf("etcd exited before it answered: %w", err)
		default:
			s.end(syscall.SIGKILL)
			return fmt.Errorf("etcd did not answer within %s: %w", ReadyTimeout, err)
		}
	}
	return nil
}

// ready reads one key; the client retries until etcd answers or ctx
// ends.
func (s *Server) ready(ctx context.Context) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), Logger: zap.NewNop(), Context: ctx})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Get(ctx, "etcdtest/ready")
	return err
}

// end signals etcd (let go first when paused) and waits for its exit.
func (s *Server) end(sig syscall.Signal) {
	s.mu.Lock()
	cmd, exited, paused := s.cmd, s.exited, s.paused
	s.cmd, s.paused = nil, false
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	if paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-exited:
	case <-time.After(ReadyTimeout):
		_ = cmd.Process.Kill()
		<-exited
	}
}

func (s *Server) signal(sig syscall.Signal, paused bool) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.t.Fatalf("etcdtest: %s to an etcd that is not running", sig)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("etcdtest: %s: %v", sig, err)
	}
	if sig == syscall.SIGSTOP || sig == syscall.SIGCONT {
		// A signal is delivered when each thread next runs: wait, with
		// a deadline, until every thread of etcd is stopped (or none
		// is), so that a test's next request meets the state it asked
		// for.
		s.awaitStopped(sig == syscall.SIGSTOP)
	}
	s.paused = paused
}

// awaitStopped waits up to five seconds until every thread of etcd is
// in the stopped state (want) or none is (!want), as /proc tells.
func (s *Server) awaitStopped(want bool) {
	s.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if allStopped(s.cmd.Process.Pid) == want {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("etcdtest: etcd's threads not %s within 5 s", map[bool]string{true: "stopped", false: "running"}[want])
		}
		<-tick.C
	}
}

// allStopped reports whether every thread of process pid is stopped
// (state T in /proc/<pid>/task/<tid>/stat).
func allStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// The state follows the command, which is in parentheses.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 || i+2 >= len(data) || data[i+2] != 'T' {
			return false
		}
	}
	return true
}

func (s *Server) cleanup() {
	s.end(syscall.SIGKILL)
	if s.t.Failed() {
		s.t.Logf("etcd's log ends:\n%s", s.logTail())
	}
}

// logTail is the last lines of etcd's log, for a failure's message.
func (s *Server) logTail() string {
	data, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// freeAddr is a loopback address with a port free a moment ago, below
// the kernel's range of ephemeral ports: while a restartable etcd is
// stopped, a connection made by any process (the tests dial a lot) may
// take a port of that range as its own end, and the restart would find
// its port in use (seen: "bind: address already in use"). Where the
// range cannot be read, or no port below it is free, any free port.
func freeAddr() (string, error) {
	if low := ephemeralLow(); low > firstPort {
		for range 100 {
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(firstPort+rand.IntN(low-firstPort)))
			if l, err := net.Listen("tcp", addr); err == nil {
				_ = l.Close()
				return addr, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// firstPort is the lowest port freeAddr picks below the ephemeral range.
const firstPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range; 0 when
// it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return low
}
