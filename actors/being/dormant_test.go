package being_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/etcdtest"
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
	srv, opts := dormantWorld(t)

	// The child: exhausted, in its own directory under children/<id>.
	childID := "0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a"
	childDir, childIdentity, child := childBo(opts, childID)
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

	h, d := startParentOfBo(t, srv, opts, childID)
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

// TestTakeoverKeepsEndedChildrenDormant: in a family across machines a
// child's state.json is only its first; each holder checkpoints into a
// directory of its own (docs/cluster.md#the-holders-files). A child that
// ran out of money under one holder is loaded dormant by the next one,
// whose parent read in that first file that it had not: it starts no Las and
// writes nothing under the new token.
//
// The first holder runs the child alone, as a family of its own, under
// the root's lock: what a holder of the whole family writes of it.
//
// With its final checkpoint lost (the first holder was SIGKILLed once
// its `stopped exhausted` committed, before the shutdown checkpoint), the
// newest checkpoint the next holder finds says the child runs: the
// committed journal decides, and the child still loads dormant.
func TestTakeoverKeepsEndedChildrenDormant(t *testing.T) {
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprintf("final checkpoint lost %t", lost), func(t *testing.T) { testTakeoverDormant(t, lost) })
	}
}

func testTakeoverDormant(t *testing.T, checkpointLost bool) {
	srv, opts := dormantWorld(t)
	etcd := etcdtest.Start(t)

	// The child's first state: not ended, with nothing left to spend.
	childID := "5a0c1e2d-3b4f-4a6b-8c7d-9e0f1a2b3c4d"
	childDir, childIdentity, child := childBo(opts, childID)
	child.Budget.Remaining = money.Zero
	child.Budget.APISpent = testkit.USD("1")
	_, _, _, err := state.Boot(childDir, false, childIdentity, func() (*state.Being, error) { return child, nil })
	require.NoError(t, err)

	tokenA := exhaustUnderFirstHolder(t, srv, etcd, opts, childDir, childIdentity)
	base, err := state.Load(childDir)
	require.NoError(t, err)
	require.NotContains(t, []string{state.StatusExhausted, state.StatusFailed}, base.Status, "the child's first state.json does not say it ended")
	if checkpointLost {
		require.NoError(t, os.Remove(filepath.Join(state.HolderDir(childDir, tokenA), state.StateFile)))
	}

	// The next holder runs the whole family.
	next := holderSession(t, etcd)
	lockB, err := next.Lock(ctxWithin(t), member.RootBeing)
	require.NoError(t, err)
	rootOpts := opts
	rootOpts.Placement = member.NewHolding(next, lockB, nil, opts.StateDir, waitLimit)
	h, d := startParentOfBo(t, srv, rootOpts, childID)
	assert.Equal(t, state.StatusExhausted, d.Status)
	require.Len(t, d.Children, 1, "a dormant child has its ledger and no Las")
	assert.Contains(t, d.Children[0].Id, "/ledger")
	h.shutdown()
	dirB := state.HolderDir(childDir, lockB.Token())
	events, err := state.ReadHolding(state.Holding{Token: lockB.Token(), Dir: dirB})
	require.NoError(t, err)
	assert.Empty(t, events, "the dormant child journaled nothing under the next holder's token")
	_, err = os.Stat(filepath.Join(dirB, state.StateFile))
	assert.ErrorIs(t, err, os.ErrNotExist, "nor checkpointed")
}

// exhaustUnderFirstHolder has a first holder of the family run the
// child in childDir alone, under the root's lock: the child finds itself
// exhausted and says so in that holder's own files, and the lock is let
// go. It returns that holder's token.
func exhaustUnderFirstHolder(t *testing.T, srv *bramatest.Server, etcd *etcdtest.Server, opts being.Options, childDir string, childIdentity state.Identity) uint64 {
	t.Helper()
	first := holderSession(t, etcd)
	lock, err := first.Lock(ctxWithin(t), member.RootBeing)
	require.NoError(t, err)
	childOpts := opts
	childOpts.StateDir, childOpts.Identity = childDir, childIdentity
	childOpts.Placement = member.NewHolding(first, lock, nil, opts.StateDir, waitLimit)
	require.Equal(t, state.StatusExhausted, resume(t, srv, childOpts).stopped().Status)
	require.NoError(t, lock.Unlock(ctxWithin(t)))
	return lock.Token()
}

// dormantWorld is a gateway that answers every completion with text, and
// a root that runs one cycle an hour with an example Las.
func dormantWorld(t *testing.T) (*bramatest.Server, being.Options) {
	t.Helper()
	srv := newBrama(t)
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		return bramatest.TextReply("nothing to do", bramatest.Usage(10, 5))
	})
	opts := options(t, being.Run)
	withExampleLas(t, &opts, `{}`)
	opts.CycleInterval = time.Hour // one cycle of the root is enough
	return srv, opts
}

// childBo is the root's child Bo with id: its directory, identity and a
// first state of 1 USD, not written yet.
func childBo(opts being.Options, id string) (string, state.Identity, *state.Being) {
	dir := filepath.Join(opts.StateDir, "children", id)
	identity := opts.Identity
	identity.Name, identity.Ticker = "Bo", "BO"
	return dir, identity, being.NewState(identity, testkit.USD("1"), opts.Model, state.Now())
}

// startParentOfBo starts a fresh root whose mind records the child Bo
// (id) as running, waits for the root's first cycle, and describes Bo.
func startParentOfBo(t *testing.T, srv *bramatest.Server, opts being.Options, id string) (*harness, messages.Description) {
	t.Helper()
	root := being.NewState(opts.Identity, opts.StartingBalance, opts.Model, state.Now())
	dir := filepath.Join(opts.StateDir, "children", id)
	root.Mind.Children = []state.Child{{ID: id, Name: "Bo", Ticker: "BO", StateDir: dir, CreatedAt: state.Now(), Status: state.StatusRunning}}
	h := startWith(t, srv, opts, root)
	h.reportFor(1)
	pid := h.system.NewLocalPID("family/root/being-Bo-" + id[:8])
	res, err := h.system.Root.RequestFuture(pid, messages.DescribeRequest{}, waitLimit).Result()
	require.NoError(t, err)
	return h, res.(messages.Description)
}

// holderSession is a member's etcd session in the family "fam".
func holderSession(t *testing.T, srv *etcdtest.Server) *fence.Session {
	t.Helper()
	s, err := fence.Open(fence.Config{Endpoints: srv.Endpoints(), Family: "fam", TTL: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// ctxWithin is a context that ends at waitLimit.
func ctxWithin(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}
