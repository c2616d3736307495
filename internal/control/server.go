package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Handler carries out one request for the server and answers it; it
// must answer within the deadline of ctx.
type Handler func(ctx context.Context, req Request) Reply

// Server is a runtime's control socket. Make it with Listen.
type Server struct {
	path    string
	ln      net.Listener
	handle  Handler
	timeout time.Duration
	wg      sync.WaitGroup
	// stop cancels the handlers in progress (Close).
	ctx  context.Context
	stop context.CancelFunc
}

// Deadlines of one connection: the request must arrive within
// readTimeout; the handler answers within the timeout Listen is given.
const (
	readTimeout  = 5 * time.Second
	writeTimeout = 5 * time.Second
	maxRequest   = 64 << 10
)

// Listen makes the control socket at path (mode 0600), replacing a file
// a runtime that died left there, and serves each connection on a
// goroutine of its own: one request, one reply, each handled by handle
// within timeout. The caller holds the state root's lock, so no other
// runtime listens there.
func Listen(path string, timeout time.Duration, handle Handler) (*Server, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	s := &Server{path: path, ln: ln, handle: handle, timeout: timeout}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Close stops listening, removes the socket, cancels the handlers in
// progress and waits for their connections to be answered.
func (s *Server) Close() {
	s.stop()
	s.ln.Close() // a unix listener unlinks its socket file
	s.wg.Wait()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(conn)
		}()
	}
}

// serve answers one connection.
func (s *Server) serve(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(readTimeout))
	var req Request
	var reply Reply
	if err := json.NewDecoder(io.LimitReader(conn, maxRequest)).Decode(&req); err != nil {
		reply = Reply{Refusal: "the request is not one JSON request of the control protocol"}
	} else if err := req.Check(); err != nil {
		reply = Reply{Refusal: err.Error()}
	} else {
		ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
		reply = s.handle(ctx, req)
		cancel()
	}
	_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	_ = json.NewEncoder(conn).Encode(reply)
}
