package being_test

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/etcdtest"
	"github.com/wisent/singularity/test/testkit"
)

// countedHold is a whole family's hold (member.Holding) that counts the
// loads of each directory.
type countedHold struct {
	*member.Holding
	mu    sync.Mutex
	loads map[string]int
}

func (c *countedHold) Hold(dir string) (*durable.Held, durable.Fence, error) {
	c.mu.Lock()
	c.loads[filepath.Clean(dir)]++
	c.mu.Unlock()
	return c.Holding.Hold(dir)
}

func (c *countedHold) loadsOf(dir string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads[filepath.Clean(dir)]
}

// endedSteps is an Observer that says when a step leaves a being
// exhausted.
type endedSteps struct {
	steps
	exhausted chan string
}

func (e *endedSteps) Step(st observe.Step) {
	if st.Status == state.StatusExhausted {
		select {
		case e.exhausted <- st.Being.Name:
		default:
		}
	}
}

// TestFundWakesHeldChildInPlace: under a cluster member's hold of the
// whole family, where a being loads once, an exhausted child that is
// funded lives again in its own actor: it asks the gateway, its status
// is running and its Las is up, its directory was loaded once, and the
// hold is kept. The child is dormant from the hold's load (a first
// holder recorded its end), or it ended under this hold and rested; a
// child of its own, which stopped with that end and was loaded under
// this hold already, is not loaded again: it lives from the next hold.
func TestFundWakesHeldChildInPlace(t *testing.T) {
	for _, c := range []struct {
		name                        string
		loadedDormant, withChildren bool
	}{
		{name: "loaded dormant", loadedDormant: true},
		{name: "ended under the hold"},
		{name: "ended under the hold with a child", withChildren: true},
	} {
		t.Run(c.name, func(t *testing.T) { testFundWakesHeldChild(t, c.loadedDormant, c.withChildren) })
	}
}

func testFundWakesHeldChild(t *testing.T, loadedDormant, withChildren bool) {
	const id, grandchildID = "6e7f8a9b-0c1d-4e2f-8a3b-4c5d6e7f8a9b", "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"
	srv, opts, boAsked := boWorld(t)
	etcd := etcdtest.Start(t)
	childDir, childIdentity, child := childBo(opts, id)
	child.Budget.Remaining = money.Zero
	child.Budget.APISpent = testkit.USD("1")
	grandchildDir := filepath.Join(childDir, "children", grandchildID)
	if withChildren {
		// Bo's child Cy, with money of its own.
		identity := childIdentity
		identity.Name, identity.Ticker = "Cy", "CY"
		_, _, _, err := state.Boot(grandchildDir, false, identity, func() (*state.Being, error) {
			return being.NewState(identity, testkit.USD("1"), opts.Model, state.Now()), nil
		})
		require.NoError(t, err)
		child.Mind.Children = []state.Child{{ID: grandchildID, Name: "Cy", Ticker: "CY", StateDir: state.ChildRecordDir(grandchildID), CreatedAt: state.Now(), Status: state.StatusRunning}}
	}
	_, _, _, err := state.Boot(childDir, false, childIdentity, func() (*state.Being, error) { return child, nil })
	require.NoError(t, err)

	if loadedDormant {
		exhaustUnderFirstHolder(t, srv, etcd, opts, childDir, childIdentity)
	}

	session := holderSession(t, etcd)
	lock, err := session.Lock(ctxWithin(t), member.RootBeing)
	require.NoError(t, err)
	hold := &countedHold{Holding: member.NewHolding(session, lock, nil, opts.StateDir, waitLimit), loads: map[string]int{}}
	ended := &endedSteps{exhausted: make(chan string, 1)}
	opts.Placement, opts.Observer = hold, ended
	h, _ := startParentOfBo(t, srv, opts, id)
	bo := h.system.NewLocalPID("family/root/" + being.ChildActorName("Bo", id))
	if !loadedDormant {
		select {
		case name := <-ended.exhausted:
			require.Equal(t, "Bo", name)
		case <-time.After(waitLimit):
			t.Fatal("the child did not end exhausted")
		}
	}
	require.Empty(t, boAsked, "the exhausted child could not pay for a completion")

	// A fund that comes while the child ends is answered busy, and
	// asked again, as the operator's command does.
	fund := messages.FundRequest{Amount: testkit.USD("2"), Key: "wake"}
	var got messages.FundResponse
	for deadline := time.Now().Add(waitLimit); ; {
		res, err := h.system.Root.RequestFuture(bo, fund, waitLimit).Result()
		require.NoError(t, err, "the child's actor takes the fund")
		got = res.(messages.FundResponse)
		if !errors.Is(got.Err, control.ErrBusy) || time.Now().After(deadline) {
			break
		}
	}
	require.NoError(t, got.Err)
	assert.Equal(t, "2", got.Remaining.String())
	select {
	case <-boAsked:
	case <-time.After(waitLimit):
		t.Fatal("the funded child never asked the gateway")
	}
	res, err := h.system.Root.RequestFuture(bo, messages.DescribeRequest{}, waitLimit).Result()
	require.NoError(t, err)
	d := res.(messages.Description)
	assert.Equal(t, state.StatusRunning, d.Status)
	require.Len(t, d.Children, 2, "the revived child has its ledger and its Las")
	assert.Contains(t, d.Children[1].Id, "/las")
	assert.Equal(t, 1, hold.loadsOf(childDir), "the child was loaded once under the hold")
	if withChildren {
		assert.Equal(t, 1, hold.loadsOf(grandchildDir), "its child stays stopped under this hold")
	}
	require.NoError(t, hold.Err(), "the hold is kept")

	h.shutdown()
	require.NoError(t, hold.Err())
	events, err := state.ReadHolding(state.Holding{Token: lock.Token(), Dir: state.HolderDir(childDir, lock.Token())})
	require.NoError(t, err)
	assert.Equal(t, 1, testkit.Count(events, state.EventFunded))
	boots := 2 // the life that ended under the hold, and the new one
	if loadedDormant {
		boots = 1
	}
	assert.Equal(t, boots, testkit.Count(events, state.EventStarted))
}

// TestFundWakesDormantChildFromItsSleep: a child whose money ran out in
// the cycle that put it to sleep for an hour, waking on messages, is
// dormant; a fund both un-ends it and wakes it, as a fund wakes a
// living being's sleep: it asks the gateway at once, not in an hour.
func TestFundWakesDormantChildFromItsSleep(t *testing.T) {
	const id = "1f2e3d4c-5b6a-4978-8a6b-5c4d3e2f1a0b"
	srv, opts, boAsked := boWorld(t)
	childDir, childIdentity, child := childBo(opts, id)
	child.Status, child.Cycle = state.StatusExhausted, 3
	child.Budget.Remaining, child.Budget.APISpent = money.Zero, testkit.USD("1")
	child.Sleep = &state.Sleep{Until: state.Time{Time: time.Now().Add(time.Hour).UTC()}, WakeOnMessage: true}
	_, _, _, err := state.Boot(childDir, false, childIdentity, func() (*state.Being, error) { return child, nil })
	require.NoError(t, err)
	h, d := startParentOfBo(t, srv, opts, id)
	require.Equal(t, state.StatusExhausted, d.Status)
	bo := h.system.NewLocalPID("family/root/" + being.ChildActorName("Bo", id))
	res, err := h.system.Root.RequestFuture(bo, messages.FundRequest{Amount: testkit.USD("2"), Key: "wake"}, waitLimit).Result()
	require.NoError(t, err)
	require.NoError(t, res.(messages.FundResponse).Err)
	select {
	case <-boAsked:
	case <-time.After(waitLimit):
		t.Fatal("the funded child slept on")
	}
	h.shutdown()
}
