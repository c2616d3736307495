package debug

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/debugtest"
)

// TestServerChecksHost: a real endpoint on loopback serves every route to
// a Host naming it and answers 421 with one plain sentence to any other
// Host, as a page of a rebound name would send.
func TestServerChecksHost(t *testing.T) {
	system, pid := spawnTree(t, debugtest.Family())
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "metric 1\n") })
	s := NewServer(ServerConfig{
		Addr:    "127.0.0.1:0",
		Handler: Handler(HandlerConfig{Root: system.Root, PID: pid, Deadline: testWait, Metrics: metrics}),
	})
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		require.NoError(t, s.Shutdown(testContext(t)))
		http.DefaultClient.CloseIdleConnections()
	})
	addr := s.Addr().String()
	port := strconv.Itoa(s.Addr().(*net.TCPAddr).Port)
	other := strconv.Itoa(s.Addr().(*net.TCPAddr).Port%60000 + 1)

	hosts := []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:" + port, true},
		{"localhost:" + port, true},
		{"LocalHost:" + port, true},
		{"[::1]:" + port, true},
		{"127.0.0.2:" + port, true},
		{"evil.example:" + port, false},
		{"evil.example", false},
		{"localhost.evil.example:" + port, false},
		{"127.0.0.1:" + other, false},
		{"localhost", false},
	}
	routes := []string{"/debug/actors", "/debug/actors?format=text", "/debug/", "/metrics", "/healthz"}
	for _, route := range routes {
		for _, h := range hosts {
			t.Run(fmt.Sprintf("%s Host %s", route, h.host), func(t *testing.T) {
				req, err := http.NewRequestWithContext(testContext(t), "GET", "http://"+addr+route, nil)
				require.NoError(t, err)
				req.Host = h.host
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				if h.ok {
					assert.Equal(t, http.StatusOK, resp.StatusCode, string(body))
					return
				}
				assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
				assert.Equal(t, errMisdirected, string(body))
				assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
			})
		}
	}
}

// TestHostAllowed: the names of an endpoint bound elsewhere than
// loopback, with --debug-allow-remote.
func TestHostAllowed(t *testing.T) {
	tests := []struct {
		bound      string
		configured string
		host       string
		want       bool
	}{
		{"192.0.2.1:6060", "192.0.2.1", "192.0.2.1:6060", true},
		{"192.0.2.1:6060", "debug.lan", "debug.lan:6060", true},
		{"192.0.2.1:6060", "debug.lan", "DEBUG.LAN:6060", true},
		{"192.0.2.1:6060", "debug.lan", "localhost:6060", true},
		{"192.0.2.1:6060", "debug.lan", "192.0.2.7:6060", false},
		{"192.0.2.1:6060", "debug.lan", "evil.example:6060", false},
		{"0.0.0.0:6060", "", "192.0.2.7:6060", true},
		{"0.0.0.0:6060", "", "[2001:db8::1]:6060", true},
		{"0.0.0.0:6060", "", "evil.example:6060", false},
		{"0.0.0.0:6060", "", "192.0.2.7:6061", false},
		{"127.0.0.1:80", "127.0.0.1", "localhost", true},
		{"127.0.0.1:80", "127.0.0.1", "[::1]", true},
		{"127.0.0.1:80", "127.0.0.1", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.bound+" "+tt.host, func(t *testing.T) {
			bound, err := net.ResolveTCPAddr("tcp", tt.bound)
			require.NoError(t, err)
			assert.Equal(t, tt.want, hostAllowed(tt.host, bound, tt.configured))
		})
	}
}
