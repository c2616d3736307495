package debug

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/debugtest"
	"github.com/wisent/singularity/test/testkit"
)

// TestEndedBeingsStay: a child whose actor is gone (it exhausted its
// money) stays on the tree and the page, under its parent, with its
// status, the reason its life ended and its money from its state.json,
// and the family's totals count it as `singularity status` does.
func TestEndedBeingsStay(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	debugtest.WriteBeing(t, root, "Ada", "10", func(*state.Being) {})
	debugtest.WriteBeing(t, filepath.Join(root, "children", "c-bo"), "Bo", "2", func(st *state.Being) {
		st.Status = "exhausted"
		st.StatusReason = "balance 0.001 is below the cheapest call"
		st.Budget.Remaining = testkit.USD("0.001")
		st.Budget.APISpent = testkit.USD("1.999")
		st.Cycle = 7
		st.Conversation = []chat.Message{{Role: "assistant", Content: "Sold my last report.\nNothing left to sell."}}
	})
	spec := debugtest.Spec{ID: "family", Description: messages.Description{Kind: "family", Name: "family", Status: "running"},
		Children: []debugtest.Spec{{ID: "being-ada", Description: messages.Description{Kind: "being", Name: "Ada", Status: "running",
			Figures: map[string]any{"id": testkit.Identity().AgentID, "cycle": 3, "balance": "8", "starting": "10", "granted": "2",
				"spent": "0", "earned": "0", "remaining": "8",
				"departed_held": "2", "departed_earned": "0"}}}}}
	system, pid := spawnTree(t, spec)
	srv := httptest.NewServer(Handler(HandlerConfig{Root: system.Root, PID: pid, Deadline: testWait, StateDir: root}))
	t.Cleanup(srv.Close)

	_, body := do(t, "GET", srv.URL+"/debug/actors")
	var tree map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &tree))
	kids := func(n map[string]any) []map[string]any {
		var out []map[string]any
		list, _ := n["children"].([]any)
		for _, c := range list {
			out = append(out, c.(map[string]any))
		}
		return out
	}
	require.Len(t, kids(tree), 1)
	ada := kids(tree)[0]
	require.Len(t, kids(ada), 1, "Bo is under Ada")
	bo := kids(ada)[0]
	assert.Equal(t, "Bo", bo["name"])
	assert.Equal(t, "exhausted", bo["status"])
	assert.Equal(t, "balance 0.001 is below the cheapest call", bo["reason"])
	assert.Equal(t, "gone", bo[FigureActor])
	assert.Equal(t, "c-bo", bo["id"])
	assert.Equal(t, "Sold my last report.", bo["last_reply"])
	assert.Equal(t, "8.001", tree[FigureFamilyRemaining], "Ada's 8 and Bo's 0.001")
	assert.Equal(t, "1.999", tree[FigureFamilySpent])
	assert.Equal(t, "exact", tree[FigureFamilyLedger])

	_, page := do(t, "GET", srv.URL+"/debug/")
	assert.Contains(t, page, `<span class="tot">2 beings</span>`)
	assert.Contains(t, page, `data-status="exhausted" data-tone="bad" title="exhausted: balance 0.001 is below the cheapest call">exhausted</span>`, "the badge says why")
	assert.Contains(t, page, "balance 0.001 is below the cheapest call")
	assert.Contains(t, page, `<div class="why" data-tone="bad">balance 0.001 is below the cheapest call</div>`, "its card says why, as text")
	assert.Contains(t, page, `<span class="bal" title="remaining 0.001 USD">0.001 USD</span>`, "its exact balance")
	assert.Contains(t, page, `<q>Sold my last report.</q>`, "what it said last")
	assert.Equal(t, 2, strings.Count(page, `data-kind="being"`))
	assert.Equal(t, 2, strings.Count(page, `<div class="card" `))
}

// TestGoneNodeRemembers: a gone being's state.json is read again only
// when it changed, and a served node's figures are its own.
func TestGoneNodeRemembers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c-bo")
	debugtest.WriteBeing(t, dir, "Bo", "1", func(st *state.Being) { st.Status = "exhausted" })
	n, ok := goneNode(dir, "c-bo")
	require.True(t, ok)
	assert.Equal(t, "exhausted", n.Status)
	n.Figures["balance"] = "(redacted)"
	again, ok := goneNode(dir, "c-bo")
	require.True(t, ok)
	assert.Equal(t, "1", again.Figures["balance"], "the remembered node is untouched")

	require.NoError(t, os.RemoveAll(dir))
	debugtest.WriteBeing(t, dir, "Bo", "1", func(st *state.Being) { st.Status = "failed"; st.StatusReason = "the gateway refused the key" })
	changed, ok := goneNode(dir, "c-bo")
	require.True(t, ok)
	assert.Equal(t, "failed", changed.Status)
	assert.Equal(t, "the gateway refused the key", changed.Figures["reason"])

	require.NoError(t, os.RemoveAll(dir))
	_, ok = goneNode(dir, "c-bo")
	assert.False(t, ok, "a directory without state.json is left out")
}
