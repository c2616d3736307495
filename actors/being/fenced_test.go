package being_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/etcdtest"
	"github.com/wisent/singularity/test/testkit"
)

// holdBeing takes the lock of the being in dir on a session of its own
// and loads it as that lock's holder: the options of a being that runs
// fenced (docs/cluster.md#the-next-holder).
func holdBeing(t *testing.T, srv *etcdtest.Server, opts being.Options, id string) (being.Options, *fence.Session, *fence.Lock, fence.Record) {
	t.Helper()
	s, err := fence.Open(fence.Config{Endpoints: srv.Endpoints(), Family: "fam", TTL: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	l, err := s.Lock(ctx, id)
	require.NoError(t, err)
	token, seq, err := s.Committed(ctx, id)
	require.NoError(t, err)
	rec := fence.Record{Token: token, Seq: seq}
	held, err := fence.Recover(opts.StateDir, l.Token(), rec)
	require.NoError(t, err)
	opts.Placement = heldOnce{held: held, fence: fence.NewCommitter(l, nil)}
	return opts, s, l, rec
}

// heldOnce places a being as the holder of what a test recovered, under
// the test's lock.
type heldOnce struct {
	held  durable.Held
	fence durable.Fence
}

func (h heldOnce) Hold(string) (*durable.Held, durable.Fence, error) { return &h.held, h.fence, nil }
func (heldOnce) ChildrenElsewhere() bool                             { return false }

// trustedLife is every trusted event of the being in dir, in order, and
// what was left out, as a next holder would judge it from rec.
func trustedLife(t *testing.T, dir string, rec fence.Record) (life []state.Event, untrusted map[uint64][]uint64) {
	t.Helper()
	all, written, err := fence.ReadHoldings(dir)
	require.NoError(t, err)
	trust, err := fence.TrustJournal(written, rec)
	require.NoError(t, err, "the journal of every holder is trusted without a gap")
	untrusted = map[uint64][]uint64{}
	for i, e := range all {
		if trust.Trusted(written[i]) {
			life = append(life, e)
		} else {
			untrusted[written[i].Token] = append(untrusted[written[i].Token], e.Seq)
		}
	}
	for i := 1; i < len(life); i++ {
		require.Less(t, life[i-1].Seq, life[i].Seq)
	}
	// Holdings are read oldest token first and each in order; trusted
	// events follow one another by seq (TrustJournal checked).
	return life, untrusted
}

// TestFencedBeingStopsAndItsNextHolderGoesOn: a being whose lock is lost
// while it cycles (its key deleted, as its lease's expiry would) is
// fenced at its next step and stops, writing nothing more, while its
// next holder, which took the lock at once, loads only what was
// committed and goes on from there. The zombie's last step is in its own
// journal and is never trusted; the family's money is exact over the
// trusted life of both holders.
func TestFencedBeingStopsAndItsNextHolderGoesOn(t *testing.T) {
	etcd := etcdtest.Start(t)
	srv := newBrama(t)
	srv.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		if last := lastMessage(r); last.Role == chat.RoleTool {
			return bramatest.TextReply("noted", bramatest.Usage(1000, 20))
		}
		return bramatest.ToolCallsReply(bramatest.Usage(1000, 20),
			bramatest.Call(fmt.Sprintf("call-%d", len(r.Completion.Messages)), "singularity_memory_remember",
				bramatest.Arguments(map[string]string{"kind": "note", "text": "a cycle"})))
	})
	base := options(t, being.Run)
	base.Pricing.InputPerMillion = testkit.USD("0.15")
	base.Pricing.OutputPerMillion = testkit.USD("0.6")
	_, _, _, err := state.Boot(base.StateDir, false, base.Identity, func() (*state.Being, error) {
		return being.NewState(base.Identity, base.StartingBalance, base.Model, state.Now()), nil
	})
	require.NoError(t, err)
	const id = "ada"

	optsA, _, lockA, _ := holdBeing(t, etcd, base, id)
	a := resume(t, srv, optsA)
	a.reportFor(3)

	// A's lock is lost while it cycles; B takes the being at once.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_, err = etcd.Client(t).Delete(ctx, lockA.Key())
	require.NoError(t, err)
	optsB, sessionB, lockB, atTakeover := holdBeing(t, etcd, base, id)
	require.Greater(t, lockB.Token(), lockA.Token())
	require.Equal(t, lockA.Token(), atTakeover.Token, "what B loads was committed under A's token")
	b := resume(t, srv, optsB)

	stopped := a.stopped()
	require.ErrorIs(t, stopped.Err, fence.ErrFenced, "A stops fenced")
	ownA := state.HolderDir(base.StateDir, lockA.Token())
	savedA, err := state.Load(ownA)
	require.NoError(t, err)
	assert.LessOrEqual(t, savedA.Seq(), atTakeover.Seq, "A's state.json holds nothing past what it committed")

	first := b.report()
	b.reportFor(first.Cycle + 2)
	require.Equal(t, state.StatusStopped, b.shutdown().Status)
	require.NoError(t, lockB.Unlock(ctx))
	token, seq, err := sessionB.Committed(ctx, id)
	require.NoError(t, err)
	final := fence.Record{Token: token, Seq: seq}
	require.Equal(t, lockB.Token(), final.Token)

	life, untrusted := trustedLife(t, base.StateDir, final)
	require.NotEmpty(t, untrusted[lockA.Token()], "A's fenced step was appended to its own journal")
	for _, s := range untrusted[lockA.Token()] {
		assert.Greater(t, s, atTakeover.Seq, "only what A wrote after B took over is left out")
	}
	assert.Len(t, untrusted, 1, "nothing of B is left out")
	assert.Equal(t, final.Seq, life[len(life)-1].Seq)
	for i, e := range life {
		require.Equal(t, uint64(i+1), e.Seq, "the trusted life is every seq once")
	}
	journalB, err := state.ReadHolding(state.Holding{Token: lockB.Token(), Dir: state.HolderDir(base.StateDir, lockB.Token())})
	require.NoError(t, err)
	assert.Equal(t, atTakeover.Seq+1, journalB[0].Seq, "B numbers on from what A committed")
	if n := optsB.Placement.(heldOnce).held.Untrusted; n > 0 {
		assert.Contains(t, warnings(journalB), fmt.Sprintf("left out %d journal event(s) an earlier holder wrote but never committed", n))
	}

	savedB, err := state.Load(state.HolderDir(base.StateDir, lockB.Token()))
	require.NoError(t, err)
	assert.Equal(t, final.Seq, savedB.Seq())
	assert.Equal(t, state.StatusStopped, savedB.Status)
	require.NoError(t, testkit.CheckInvariant(savedB.Budget, life), "money is exact over the trusted life")
	assert.True(t, savedB.Budget.Remaining.Cmp(base.StartingBalance) < 0, "the being paid for its rounds")

	// Loading the being once more gives B's final state.
	next, err := fence.Recover(base.StateDir, lockB.Token()+1, final)
	require.NoError(t, err)
	assert.Equal(t, final.Seq+1, next.Next)
	assert.Equal(t, savedB.Budget, next.Checkpoint.Budget)
	assert.Empty(t, next.Events)
}

// TestToolCallInFlightAtTakeoverIsNeverReplayed: a being loses its lock
// while a tool call of its runs in Las. Its next holder closes that call
// as indeterminate (interrupted), tells the model so, and never sends it
// again: Las saw it once.
func TestToolCallInFlightAtTakeoverIsNeverReplayed(t *testing.T) {
	etcd := etcdtest.Start(t)
	srv := newBrama(t)
	var first atomic.Bool
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		if first.CompareAndSwap(false, true) {
			return bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("slow", "chaos__slow", `{"key":"s","ms":60000}`))
		}
		return bramatest.TextReply("carrying on", bramatest.Usage(10, 5))
	})
	deliveries := filepath.Join(t.TempDir(), "deliveries")
	base := options(t, being.Run)
	withExampleLas(t, &base, fmt.Sprintf(`{"deliveries_file":%q}`, deliveries))
	_, _, _, err := state.Boot(base.StateDir, false, base.Identity, func() (*state.Being, error) {
		return being.NewState(base.Identity, base.StartingBalance, base.Model, state.Now()), nil
	})
	require.NoError(t, err)
	const id = "bo"

	optsA, _, lockA, _ := holdBeing(t, etcd, base, id)
	a := resume(t, srv, optsA)
	require.Eventually(t, func() bool {
		data, _ := os.ReadFile(deliveries)
		return strings.Contains(string(data), "call chaos__slow s\n")
	}, waitLimit, 10*time.Millisecond, "the call reached Las")

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_, err = etcd.Client(t).Delete(ctx, lockA.Key())
	require.NoError(t, err)
	optsB, _, lockB, _ := holdBeing(t, etcd, base, id)
	b := resume(t, srv, optsB)
	b.reportFor(2)
	require.Equal(t, state.StatusStopped, b.shutdown().Status)

	saved, err := state.Load(state.HolderDir(base.StateDir, lockB.Token()))
	require.NoError(t, err)
	var answer *chat.Message
	for i, m := range saved.Conversation {
		if m.Role == chat.RoleTool && m.ToolCallID == "slow" {
			require.Nil(t, answer, "the call is answered once")
			answer = &saved.Conversation[i]
		}
	}
	require.NotNil(t, answer, "the call in flight is answered")
	assert.Equal(t, outcome.Unknown("interrupted", "the being stopped before this call finished").Envelope(), answer.Content)
	journalB, err := state.ReadHolding(state.Holding{Token: lockB.Token(), Dir: state.HolderDir(base.StateDir, lockB.Token())})
	require.NoError(t, err)
	assert.Contains(t, warnings(journalB), "closed 1 tool call(s) interrupted by the previous stop")
	data, err := os.ReadFile(deliveries)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(data), "call chaos__slow"), "Las saw the call once: %s", data)

	// The former holder, stopped, abandons the call and is fenced at the
	// first step it tries.
	require.ErrorIs(t, a.shutdown().Err, fence.ErrFenced)
	data, err = os.ReadFile(deliveries)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(data), "call chaos__slow"), "Las saw the call once: %s", data)
}
