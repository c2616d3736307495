package debug

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/debugtest"
	"github.com/wisent/singularity/test/testkit"
)

const leaked = "hunter2-secret-value"

// familyOnDisk writes a root being and one child with a few journal
// events each and returns the root's directory.
func familyOnDisk(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "state")
	at := state.Time{Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	unchanged := func(*state.Being) {}
	debugtest.WriteBeing(t, root, "Ada", "1", unchanged,
		state.Started(at), state.CycleStarted(at, 1),
		state.Debited(at, 1, testkit.USD("0.1"), money.Zero, 10),
		state.Warning(at, 1, "<script>alert(1)</script> and "+leaked),
		state.RevenueCredited(at, 1, testkit.USD("0.5"), "finance__x"),
	)
	debugtest.WriteBeing(t, filepath.Join(root, "children", "c-bo"), "Bo", "1", unchanged, state.Started(at))
	return root
}

func TestBeingRoutes(t *testing.T) {
	t.Setenv("WISENT_APP_AGENT_AUTH_SECRET", leaked)
	root := familyOnDisk(t)
	system, pid := spawnTree(t, debugtest.Family())
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("# metrics\n")) })
	srv := httptest.NewServer(Handler(HandlerConfig{Root: system.Root, PID: pid, Deadline: testWait, StateDir: root, Metrics: metrics}))
	t.Cleanup(srv.Close)
	off := httptest.NewServer(Handler(HandlerConfig{Root: system.Root, PID: pid, Deadline: testWait}))
	t.Cleanup(off.Close)
	rootID := testkit.Identity().AgentID

	for _, tc := range []struct {
		name, url string
		code      int
	}{
		{"tail zero", srv.URL + "/debug/beings/" + rootID + "/journal?tail=0", 400},
		{"tail word", srv.URL + "/debug/beings/" + rootID + "/journal?tail=x", 400},
		{"bad format", srv.URL + "/debug/beings/" + rootID + "/journal?format=xml", 400},
		{"unknown being", srv.URL + "/debug/beings/nobody/journal", 404},
		{"dot dot", srv.URL + "/debug/beings/%2e%2e/journal", 404},
		{"unknown balance", srv.URL + "/debug/beings/nobody/balance", 404},
		{"post", srv.URL + "/debug/beings/" + rootID + "/journal", 405},
		{"no state dir", off.URL + "/debug/beings/" + rootID + "/journal", 404},
		{"no metrics", off.URL + "/metrics", 404},
		{"metrics", srv.URL + "/metrics", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := "GET"
			if tc.name == "post" {
				method = "POST"
			}
			resp, _ := do(t, method, tc.url)
			assert.Equal(t, tc.code, resp.StatusCode)
		})
	}

	t.Run("tail as JSON lines, redacted", func(t *testing.T) {
		resp, body := do(t, "GET", srv.URL+"/debug/beings/"+rootID+"/journal?tail=3")
		require.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
		lines := strings.Split(strings.TrimSpace(body), "\n")
		require.Len(t, lines, 3)
		var types []string
		for _, l := range lines {
			var e map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &e))
			types = append(types, e["type"].(string))
		}
		assert.Equal(t, []string{"cost_debited", "warning", "revenue_credited"}, types)
		assert.NotContains(t, body, leaked)
		assert.Contains(t, lines[1], `"message":"(redacted)"`)
		assert.Equal(t, `{"type":"revenue_credited","seq":5,"at":"2026-03-01T12:00:00.000000Z","cycle":1,"amount":"0.5","source":"finance__x"}`, lines[2], "untouched lines are served as written")
	})

	t.Run("tail as a page", func(t *testing.T) {
		resp, body := do(t, "GET", srv.URL+"/debug/beings/c-bo/journal?tail=5&format=html")
		require.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
		assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
		assert.Contains(t, body, "Journal of Bo")
		assert.Equal(t, 1, strings.Count(body, `<td class="seq">`))

		_, body = do(t, "GET", srv.URL+"/debug/beings/"+rootID+"/journal?format=html")
		assert.NotContains(t, body, "<script>")
		assert.NotContains(t, body, leaked)
		assert.Equal(t, 5, strings.Count(body, `<td class="seq">`))
	})

	t.Run("balance series", func(t *testing.T) {
		resp, body := do(t, "GET", srv.URL+"/debug/beings/"+rootID+"/balance")
		require.Equal(t, 200, resp.StatusCode)
		var got struct {
			ID     string `json:"id"`
			Points []struct {
				Seq     uint64 `json:"seq"`
				Balance string `json:"balance"`
			} `json:"points"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &got))
		assert.Equal(t, rootID, got.ID)
		var balances []string
		for _, p := range got.Points {
			balances = append(balances, p.Balance)
		}
		assert.Equal(t, []string{"1", "0.9", "1.4"}, balances)
	})
}

// TestBeingRoutesOfACommittedFamily: with HandlerConfig.Committed (a family
// across processes) the journal and balance routes show only what it
// says was committed, however much more the files hold; as more is
// committed the balance series grows by it.
func TestBeingRoutesOfACommittedFamily(t *testing.T) {
	root := familyOnDisk(t)
	all, err := state.ReadJournal(filepath.Join(root, state.JournalFile))
	require.NoError(t, err)
	require.Len(t, all, 5)
	var mu sync.Mutex
	committed := 3 // started, cycle_started, cost_debited
	life := func(_ context.Context, dir string, after uint64, n int) ([]state.Event, error) {
		if dir != root {
			return nil, errors.New("only the root is asked for here")
		}
		mu.Lock()
		defer mu.Unlock()
		var past []state.Event
		for _, e := range all[:committed] {
			if e.Seq > after {
				past = append(past, e)
			}
		}
		if n >= 0 && len(past) > n {
			past = past[len(past)-n:]
		}
		return past, nil
	}
	system, pid := spawnTree(t, debugtest.Family())
	srv := httptest.NewServer(Handler(HandlerConfig{Root: system.Root, PID: pid, Deadline: testWait, StateDir: root, Committed: life}))
	t.Cleanup(srv.Close)
	rootID := testkit.Identity().AgentID
	types := func() []string {
		resp, body := do(t, "GET", srv.URL+"/debug/beings/"+rootID+"/journal?tail=10")
		require.Equal(t, 200, resp.StatusCode)
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
			var e map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &e))
			out = append(out, e["type"].(string))
		}
		return out
	}
	balances := func() []string {
		resp, body := do(t, "GET", srv.URL+"/debug/beings/"+rootID+"/balance")
		require.Equal(t, 200, resp.StatusCode)
		var got struct {
			Points []struct {
				Balance string `json:"balance"`
			} `json:"points"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &got))
		var out []string
		for _, p := range got.Points {
			out = append(out, p.Balance)
		}
		return out
	}

	assert.Equal(t, []string{"started", "cycle_started", "cost_debited"}, types(), "the uncommitted warning and credit are not shown")
	assert.Equal(t, []string{"1", "0.9"}, balances())
	mu.Lock()
	committed = 5
	mu.Unlock()
	assert.Equal(t, []string{"started", "cycle_started", "cost_debited", "warning", "revenue_credited"}, types())
	assert.Equal(t, []string{"1", "0.9", "1.4"}, balances(), "the series takes what was committed since")

	resp, _ := do(t, "GET", srv.URL+"/debug/beings/c-bo/journal")
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode, "a being whose record cannot be read")
}
