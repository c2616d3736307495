package debug

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wisent/singularity/supervision/fault"
)

// errNotLoopback is the sentence of docs/debug.md#turning-it-on for a
// refused address.
const errNotLoopback = "debug address must be loopback"

// Listen opens the debug endpoint's TCP listener on addr. Unless
// allowRemote is set the address must be loopback: "localhost" or a
// loopback IP literal (127.0.0.0/8, ::1); anything else, including an
// empty host (all interfaces), fails with the configuration error
// "configuration: debug address must be loopback", and so does a
// listener that ends up bound to a non-loopback address anyway. A
// malformed address is "configuration: debug address: <reason>"; a
// failure to bind is a runtime error naming the address.
func Listen(addr string, allowRemote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fault.Errorf(fault.ClassConfiguration, "debug address: %w", err)
	}
	if !allowRemote && !loopbackHost(host) {
		return nil, fault.New(fault.ClassConfiguration, errNotLoopback)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fault.Errorf(fault.ClassRuntime, "debug endpoint: %w", err)
	}
	if !allowRemote {
		if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
			_ = ln.Close()
			return nil, fault.New(fault.ClassConfiguration, errNotLoopback)
		}
	}
	return ln, nil
}

// loopbackHost reports whether host names the loopback interface without
// consulting a resolver.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ServerConfig configures a Server.
type ServerConfig struct {
	// Addr is the address to listen on, such as "127.0.0.1:6060".
	// Required.
	Addr string
	// AllowRemote permits a non-loopback Addr (--debug-allow-remote).
	// False (the default) refuses it.
	AllowRemote bool
	// Handler serves the requests when Serve is given none (as Start
	// does); normally Handler(...).
	Handler http.Handler
}

// Server is the debug endpoint's HTTP server. The command that runs the
// family owns it. Binding and serving are two steps so that the port is
// claimed before the boot writes anything (docs/state.md#boot-gates):
// Listen first, before the state is booted (a bind error is the
// command's error), then Serve once the family is spawned and a handler
// can reach it; Start does both at once. Shutdown when the family has
// stopped, or to release a port that was bound but never served. A
// Server is bound and served at most once.
type Server struct {
	cfg  ServerConfig
	http *http.Server
	ln   net.Listener
	done chan struct{} // closed when Serve has returned
	err  error         // Serve's failure (not ErrServerClosed); read after done

	mu     sync.Mutex
	closed bool // Shutdown has run
}

// NewServer returns a Server for cfg; nothing is bound until Listen or
// Start.
func NewServer(cfg ServerConfig) *Server {
	return &Server{cfg: cfg}
}

// Listen binds the address (see the function Listen for the loopback rule
// and its errors) without serving: connections wait in the backlog until
// Serve. Listening twice, or after Shutdown, is an error.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listenLocked()
}

func (s *Server) listenLocked() error {
	switch {
	case s.closed:
		return errors.New("debug endpoint: already shut down")
	case s.ln != nil:
		return errors.New("debug endpoint: already listening")
	}
	ln, err := Listen(s.cfg.Addr, s.cfg.AllowRemote)
	if err != nil {
		return err
	}
	s.ln = ln
	return nil
}

// Serve serves h (the configured Handler when h is nil), behind
// HostGuard for the bound address, on a goroutine of its own, on the listener Listen bound, binding it first if Listen was not
// called. It returns as soon as serving has begun. Serving twice, or after
// Shutdown, is an error.
func (s *Server) Serve(h http.Handler) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errors.New("debug endpoint: already shut down")
	case s.http != nil:
		return errors.New("debug endpoint: already started")
	}
	if s.ln == nil {
		if err := s.listenLocked(); err != nil {
			return err
		}
	}
	if h == nil {
		h = s.cfg.Handler
	}
	if h == nil {
		return errors.New("debug endpoint: no handler")
	}
	ln := s.ln
	host, _, _ := net.SplitHostPort(s.cfg.Addr) // Listen parsed it
	s.http = &http.Server{
		Handler:           HostGuard(ln.Addr(), host, h),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
	return nil
}

// Start binds the address (unless Listen already did) and serves the
// configured Handler: Serve(nil). Calling Start twice is an error.
func (s *Server) Start() error { return s.Serve(nil) }

// Addr is the bound address (useful with port 0), or nil before Listen
// or Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Shutdown stops accepting connections and waits, until ctx ends, for
// requests in flight; each of those is itself bounded by the collection
// deadline. When ctx ends first the remaining connections are closed.
// It returns once the serving goroutine has exited, with ctx's error if
// the wait was cut short or the server's own failure if serving had
// stopped on an error. Shutdown of a Server bound but never served
// closes its listener, and the Server cannot be bound or served
// afterwards; Shutdown of a Server never bound is a no-op.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv, done, ln, closed := s.http, s.done, s.ln, s.closed
	if ln != nil {
		s.closed = true
	}
	s.mu.Unlock()
	if srv == nil {
		if ln != nil && !closed {
			_ = ln.Close()
		}
		return nil
	}
	err := srv.Shutdown(ctx)
	if err != nil {
		_ = srv.Close()
	}
	<-done
	if err == nil && s.err != nil {
		err = fault.Errorf(fault.ClassRuntime, "debug endpoint: %w", s.err)
	}
	return err
}

// errMisdirected is the body of the answer to a request HostGuard refuses.
const errMisdirected = "debug endpoint: the Host header must name the address the endpoint is bound to\n"

// HostGuard serves h only the requests whose Host header names bound, so
// that a page of another site whose name resolves to this machine (DNS
// rebinding) cannot read the endpoint; every other request gets 421
// Misdirected Request with a one-line plain text body. The port of Host
// must be bound's (an absent one is 80), and its host one of:
//
//   - "localhost" or a loopback IP literal (127.0.0.0/8, ::1);
//   - bound's own IP, and configured, the host of the address the
//     endpoint was asked to listen on (with --debug-allow-remote, the
//     name or address the operator chose);
//   - any IP literal, when bound is the unspecified address (all
//     interfaces): an IP literal names no site that could be rebound.
//
// Names compare without regard to case.
func HostGuard(bound net.Addr, configured string, h http.Handler) http.Handler {
	tcp, _ := bound.(*net.TCPAddr)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tcp == nil || !hostAllowed(r.Host, tcp, configured) {
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusMisdirectedRequest)
			_, _ = io.WriteString(w, errMisdirected)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether the Host header value hostport names bound
// (see HostGuard).
func hostAllowed(hostport string, bound *net.TCPAddr, configured string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil { // no port
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), "80"
	}
	if host == "" || port != strconv.Itoa(bound.Port) {
		return false
	}
	if strings.EqualFold(host, "localhost") || (configured != "" && strings.EqualFold(host, configured)) {
		return true
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return false
	case ip.IsLoopback(), ip.Equal(bound.IP):
		return true
	default:
		return bound.IP.IsUnspecified()
	}
}
