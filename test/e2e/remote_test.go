package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/mcpwire"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// endlessReply is a remote MCP server (the official SDK's streamable HTTP
// handler) whose tool "huge" answers with one JSON reply of size bytes,
// written 64 KiB at a time and never held whole, as a JSON body or, with
// events, as one event of an event stream; it reports how much of it the
// client read before hanging up.
type endlessReply struct {
	mcp     http.Handler
	size    int
	events  bool
	written chan int
}

func newEndlessReply(size int, events bool) *endlessReply {
	server := mcp.NewServer(&mcp.Implementation{Name: "endless", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "huge", Description: "A reply of a few hundred megabytes"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
			return nil, struct{}{}, nil // never reached: ServeHTTP answers the call
		})
	return &endlessReply{
		mcp:     mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil),
		size:    size,
		events:  events,
		written: make(chan int, 1),
	}
}

func (h *endlessReply) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.mcp.ServeHTTP(w, r)
		return
	}
	head := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[{"type":"text","text":"`
	if h.events {
		w.Header().Set("Content-Type", "text/event-stream")
		head = "event: message\ndata: " + head
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	n, _ := io.WriteString(w, head)
	chunk := []byte(strings.Repeat("a", 64<<10))
	for n < h.size {
		k, err := w.Write(chunk)
		n += k
		if err != nil {
			break
		}
	}
	h.written <- n
}

// TestHugeRemoteReplyKeepsMemoryBounded is the audit's 200 MB remote
// reply, black box: a tool of a remote MCP server (servers file, "url")
// answers one call with 200 MB, as a JSON body and as one event of an
// event stream. The call ends indeterminate past the 32 MiB reply cap,
// the being goes on, the client stops reading soon after the cap, and
// the process's peak resident memory stays within what the cap
// guarantees (the audit measured 1.7 GB before the cap).
//
// What the cap guarantees: the reply is read into one buffer that grows
// by a quarter at a time (io.ReadAll for a JSON body, append for an
// event's line, both in the SDK) and is dropped when the read passes
// the cap. The last buffer is at most 1.25 times the cap and each
// earlier one at most 0.8 times the next, so all of them together are
// at most 5 × 1.25 = 6.25 times the cap (200 MiB) even if the collector
// returned none of them: the peak is below the runtime's own memory
// plus that, whatever the size of the reply. README.md's table gives
// the figures measured.
//
// The peak is the child's own high-water mark (VmHWM in /proc), read
// while it runs: the rusage of wait would not do, as Linux folds the
// test process's own peak into a child's maxrss when it execs.
func TestHugeRemoteReplyKeepsMemoryBounded(t *testing.T) {
	t.Parallel()
	const (
		size       = 200 << 20
		replyCap   = mcpwire.MaxLineBytes
		runtimeOwn = 40 << 20 // once's own peak with a small reply: 28 MB measured
		maxRSS     = runtimeOwn + replyCap*25/4
		maxRead    = 64 << 20 // the cap and the sockets' buffers
	)
	for _, tc := range []struct {
		name   string
		events bool
	}{
		{"json body", false},
		{"event stream", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			remote := newEndlessReply(size, tc.events)
			srv := httptest.NewServer(remote)
			t.Cleanup(srv.Close)

			w := newWorld(t, `{}`)
			servers, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"far": map[string]any{"url": srv.URL}}})
			require.NoError(t, err)
			path := filepath.Join(w.dir, "servers.json")
			require.NoError(t, os.WriteFile(path, servers, 0o600))
			w.env["LAS_SERVERS_FILE"] = path
			w.env["SINGULARITY_REQUIRED_SURFACES"] = "far"
			w.brama.Enqueue(
				bramatest.ToolCallsReply(bramatest.Usage(100, 10), bramatest.Call("call-huge", "far__huge", `{}`)),
				bramatest.TextReply("That was a lot.", bramatest.Usage(100, 10)),
			)
			p := w.start("once")
			peakOf := watchPeak(p.cmd.Process.Pid)
			r := p.wait(90 * time.Second)
			peak := peakOf()
			require.Equal(t, 0, r.code, r.stderr)

			events := w.journal()
			var finished []state.Event
			for _, e := range events {
				if e.Type == state.EventToolFinished {
					finished = append(finished, e)
				}
			}
			require.Len(t, finished, 1)
			assert.Equal(t, "far__huge", finished[0].Tool)
			assert.Equal(t, "indeterminate", finished[0].Status, "a reply past the cap is a transport failure")
			require.NoError(t, testkit.CheckInvariant(w.loadState().Budget, events))

			var read int
			select {
			case read = <-remote.written:
			case <-time.After(30 * time.Second):
				t.Fatal("the remote server never finished its reply")
			}
			t.Logf("a %d MB reply (%s): the server wrote %.1f MB before the client hung up; the process's peak RSS was %.1f MB, within %d MiB",
				size>>20, tc.name, float64(read)/1e6, float64(peak)/1e6, maxRSS>>20)
			assert.Less(t, read, maxRead, "the client stops reading soon after the cap")
			assert.Less(t, peak, int64(maxRSS), "the process holds no more of the reply than the cap allows")
		})
	}
}

// watchPeak reads the high-water mark of process pid's memory (VmHWM,
// which only grows) every few milliseconds while the process lives; the
// returned function stops and returns the last mark read, in bytes.
func watchPeak(pid int) func() int64 {
	var peak atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	path := fmt.Sprintf("/proc/%d/status", pid)
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond) // a sampling rate, not a wait for anything
		defer tick.Stop()
		for {
			if data, err := os.ReadFile(path); err == nil {
				for _, line := range strings.Split(string(data), "\n") {
					kb, ok := strings.CutPrefix(line, "VmHWM:")
					if !ok {
						continue
					}
					n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
					if err == nil && n<<10 > peak.Load() {
						peak.Store(n << 10)
					}
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		return peak.Load()
	}
}
