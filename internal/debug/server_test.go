package debug

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/debugtest"
)

// ipv6Loopback reports whether [::1] can be bound on this machine.
func ipv6Loopback() bool {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

func TestListen(t *testing.T) {
	const refused = "configuration: debug address must be loopback"
	tests := []struct {
		addr        string
		allowRemote bool
		err         string // empty: accepted
		class       fault.Class
	}{
		{"0.0.0.0:0", false, refused, fault.ClassConfiguration},
		{":0", false, refused, fault.ClassConfiguration},
		{"[::]:0", false, refused, fault.ClassConfiguration},
		{"192.0.2.1:0", false, refused, fault.ClassConfiguration},
		{"example.com:0", false, refused, fault.ClassConfiguration},
		{"127.0.0.1", false, "configuration: debug address: address 127.0.0.1: missing port in address", fault.ClassConfiguration},
		{"127.0.0.1:0", false, "", 0},
		{"127.0.0.2:0", false, "", 0},
		{"[::1]:0", false, "", 0},
		{"localhost:0", false, "", 0},
		{"0.0.0.0:0", true, "", 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s remote=%v", tt.addr, tt.allowRemote), func(t *testing.T) {
			if tt.addr == "[::1]:0" && !ipv6Loopback() {
				t.Skip("this machine has no IPv6 loopback")
			}
			ln, err := Listen(tt.addr, tt.allowRemote)
			if tt.err != "" {
				require.Error(t, err)
				assert.Nil(t, ln)
				assert.Equal(t, tt.err, err.Error())
				assert.Equal(t, tt.class, fault.ClassOf(err))
				assert.Equal(t, 2, fault.ExitCode(err))
				return
			}
			require.NoError(t, err)
			defer ln.Close()
			if !tt.allowRemote {
				assert.True(t, ln.Addr().(*net.TCPAddr).IP.IsLoopback(), "bound to %s", ln.Addr())
			}
		})
	}
}

func TestListenAddressInUse(t *testing.T) {
	first, err := Listen("127.0.0.1:0", false)
	require.NoError(t, err)
	defer first.Close()
	_, err = Listen(first.Addr().String(), false)
	require.Error(t, err)
	assert.Equal(t, fault.ClassRuntime, fault.ClassOf(err))
	assert.Contains(t, err.Error(), "runtime: debug endpoint: ")
}

func TestServerLifecycle(t *testing.T) {
	system, pid := spawnTree(t, debugtest.Family())
	s := NewServer(ServerConfig{
		Addr:    "127.0.0.1:0",
		Handler: Handler(HandlerConfig{Root: system.Root, PID: pid, Deadline: testWait}),
	})
	assert.Nil(t, s.Addr(), "nothing bound before Start")
	require.NoError(t, s.Shutdown(testContext(t)), "shutdown before start is a no-op")
	require.NoError(t, s.Start())
	require.Error(t, s.Start(), "started once only")

	base := "http://" + s.Addr().String()
	resp, body := do(t, "GET", base+"/healthz")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "ok", body)
	_, body = do(t, "GET", base+"/debug/actors?format=text")
	assert.Equal(t, familyText, body)

	require.NoError(t, s.Shutdown(testContext(t)))
	req, err := http.NewRequestWithContext(testContext(t), "GET", base+"/healthz", nil)
	require.NoError(t, err)
	_, err = http.DefaultClient.Do(req)
	require.Error(t, err, "nothing listens after Shutdown")
	http.DefaultClient.CloseIdleConnections()
}

func TestServerRefusesRemote(t *testing.T) {
	s := NewServer(ServerConfig{Addr: "0.0.0.0:0", Handler: http.NotFoundHandler()})
	err := s.Start()
	require.Error(t, err)
	assert.Equal(t, "configuration: debug address must be loopback", err.Error())
	assert.Nil(t, s.Addr())
	require.NoError(t, s.Shutdown(context.Background()))
}

func TestServerShutdownCutShort(t *testing.T) {
	entered := make(chan struct{})
	left := make(chan struct{})
	s := NewServer(ServerConfig{Addr: "127.0.0.1:0", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(left)
		close(entered)
		<-r.Context().Done() // a request that would never finish by itself
	})})
	require.NoError(t, s.Start())

	clientErr := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(testContext(t), "GET", "http://"+s.Addr().String()+"/", nil)
		if err == nil {
			var resp *http.Response
			if resp, err = http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		clientErr <- err
	}()
	await(t, entered)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Shutdown(ctx)
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	await(t, left) // the connection was closed under the handler
	assert.Error(t, await(t, clientErr))
}

func TestServerListenThenServe(t *testing.T) {
	s := NewServer(ServerConfig{Addr: "127.0.0.1:0"}) // the handler comes with Serve
	require.NoError(t, s.Listen())
	require.NotNil(t, s.Addr(), "bound by Listen")
	require.Error(t, s.Listen(), "bound once only")

	// The port is claimed before anything serves: a second bind fails.
	_, err := Listen(s.Addr().String(), false)
	require.Error(t, err)
	assert.Equal(t, fault.ClassRuntime, fault.ClassOf(err))

	require.NoError(t, s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("served"))
	})))
	require.Error(t, s.Serve(http.NotFoundHandler()), "served once only")
	require.Error(t, s.Start(), "started once only")
	resp, body := do(t, "GET", "http://"+s.Addr().String()+"/")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "served", body)
	require.NoError(t, s.Shutdown(testContext(t)))
	http.DefaultClient.CloseIdleConnections()
}

func TestServerListenBusyPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	s := NewServer(ServerConfig{Addr: busy.Addr().String()})
	err = s.Listen()
	require.Error(t, err)
	assert.Equal(t, fault.ClassRuntime, fault.ClassOf(err))
	assert.Equal(t, 5, fault.ExitCode(err))
	assert.Equal(t, "runtime: debug endpoint: listen tcp "+busy.Addr().String()+": bind: address already in use", err.Error())
	assert.Nil(t, s.Addr())
	require.NoError(t, s.Shutdown(context.Background()))
}

func TestServerShutdownReleasesUnservedListener(t *testing.T) {
	s := NewServer(ServerConfig{Addr: "127.0.0.1:0", Handler: http.NotFoundHandler()})
	require.NoError(t, s.Listen())
	addr := s.Addr().String()
	require.NoError(t, s.Shutdown(context.Background()))
	require.NoError(t, s.Shutdown(context.Background()), "a second Shutdown is harmless")
	again, err := Listen(addr, false)
	require.NoError(t, err, "the port is free again")
	require.NoError(t, again.Close())
	require.Error(t, s.Serve(nil), "a shut down Server does not serve")
	require.Error(t, s.Listen(), "nor bind")
}
