package being_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// TestResumeKeepsEndedChildrenDormant: `run --resume` brings back recorded
// children that had run out of money or failed (docs/family.md#spawning):
// they are loaded for the tree, with their own ledger, but never cycle, never
// start a Las process, and keep their status through the shutdown, so the
// next resume leaves them dormant again.
func TestResumeKeepsEndedChildrenDormant(t *testing.T) {
	for _, status := range []string{state.StatusExhausted, state.StatusFailed} {
		t.Run(status, func(t *testing.T) { testDormantChild(t, status) })
	}
}

func testDormantChild(t *testing.T, status string) {
	srv := newBrama(t)
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		return bramatest.TextReply("nothing to do", bramatest.Usage(10, 5))
	})
	opts := options(t, being.Run)
	withExampleLas(t, &opts, `{}`)
	opts.CycleInterval = time.Hour // one cycle of the root is enough

	// The child: exhausted, in its own directory under children/<id>.
	childID := "0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a"
	childDir := filepath.Join(opts.StateDir, "children", childID)
	childIdentity := opts.Identity
	childIdentity.Name, childIdentity.Ticker = "Bo", "BO"
	child := being.NewState(childIdentity, testkit.USD("1"), opts.Model, state.Now())
	child.Status = status
	child.Cycle = 7
	if status == state.StatusExhausted {
		child.Budget.Remaining = money.Zero
		child.Budget.APISpent = testkit.USD("1")
	}
	_, _, _, err := state.Boot(childDir, false, childIdentity, func() (*state.Being, error) { return child, nil })
	require.NoError(t, err)
	before, err := os.ReadFile(filepath.Join(childDir, "state.json"))
	require.NoError(t, err)

	root := being.NewState(opts.Identity, opts.StartingBalance, opts.Model, state.Now())
	root.Mind.Children = []state.Child{{ID: childID, Name: "Bo", Ticker: "BO", StateDir: childDir, CreatedAt: state.Now(), Status: state.StatusRunning}}
	h := startWith(t, srv, opts, root)
	h.reportFor(1)

	childPID := h.system.NewLocalPID("family/root/being-Bo-" + childID[:8])
	res, err := h.system.Root.RequestFuture(childPID, messages.DescribeRequest{}, waitLimit).Result()
	require.NoError(t, err)
	d := res.(messages.Description)
	assert.Equal(t, "Bo", d.Name)
	assert.Equal(t, status, d.Status)
	require.Len(t, d.Children, 1, "a dormant child has its ledger and no Las")
	assert.Contains(t, d.Children[0].Id, "/ledger")

	after, err := os.ReadFile(filepath.Join(childDir, "state.json"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "a dormant child's state is not rewritten while it idles")
	h.shutdown()
	st, err := state.Load(childDir)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), st.Cycle, "it never cycled")
	assert.Equal(t, status, st.Status, "the shutdown keeps its status")
}
