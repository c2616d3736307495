package cluster

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/store/state"
)

// noSocket is the environment of a member that listens on no control
// socket, as a member on another machine than the operator's: its
// socket on the shared mount would refuse the command's connection.
var noSocket = map[string]string{"SINGULARITY_CLUSTER_CONTROL_SOCKET": "false"}

// TestFundAndSayReachTheHolderThroughAStandby: the member that holds the
// whole family listens on no socket the command can reach, and its
// standby does. A fund and a message to the root, and a fund to a child,
// sent to the standby's socket go through the link to the holder, where
// the beings journal them under the holder's fence: the family's ledger
// is exact with the funds in it, and a key is applied once.
func TestFundAndSayReachTheHolderThroughAStandby(t *testing.T) {
	w := newWorld(t)
	holder := w.startWith(withMember("m1", noSocket))
	holder.await(t, "this member holds the family", waitLimit)
	standby := w.start("m2")
	standby.await(t, "standing by for the family's lock", waitLimit)
	require.True(t, w.seen.until(waitLimit, func(now map[string]int) bool {
		return now[rootName] >= 2 && now[grandchildParent] >= 1
	}), "the root and Bo cycled")
	requireSocketsOf(t, w, "m2")

	w.fundAndSay(t, "s", "hello through the standby")

	stopInTurn(t, standby, holder)
	funded, ledger := w.funded(t)
	assert.Equal(t, "0.75", funded)
	assert.Equal(t, "exact", ledger)
	assert.Equal(t, 1, w.received(t, rootName, "s-say"), "the message is journaled once, by the holder")
}

// TestFundReachesASpreadBeingThroughAnotherMember: in a family spread
// over two members, one listens on no socket the command can reach; a
// fund to a being placed on it, sent to the other member's socket, goes
// through the link to it.
func TestFundReachesASpreadBeingThroughAnotherMember(t *testing.T) {
	w := newWorld(t)
	w.spreadOut()
	started := 0
	w.startSpread(t, 2, func() *proc {
		started++
		if started == 1 {
			return w.startWith(withMember("alpha", noSocket))
		}
		return w.start("beta")
	})
	require.True(t, w.seen.until(waitLimit, func(now map[string]int) bool {
		return now[rootName] >= 2 && now[grandchildParent] >= 1
	}), "the root and Bo cycled")
	requireSocketsOf(t, w, "beta")
	ids := w.beingIDs(t)
	placed := w.placedOn(t)
	var target string
	for name, id := range ids {
		if placed[id] == "alpha" {
			target = name
		}
	}
	require.NotEmpty(t, target, "the member without a socket holds a being: %v", placed)

	out, err := w.operate(t, "fund", "--being", target, "0.5", "--key", "s-far")
	require.NoError(t, err, errText(err))
	assert.Regexp(t, `^funded `+target+` 0\.5 USD \(key s-far\); remaining \S+ USD\n$`, out)
	funded, ledger := w.funded(t)
	assert.Equal(t, "0.5", funded)
	assert.Equal(t, "exact", ledger)
}

// withMember is the environment change that starts member name with
// change besides.
func withMember(name string, change map[string]string) map[string]string {
	env := map[string]string{"SINGULARITY_CLUSTER_MEMBER": name}
	for k, v := range change {
		env[k] = v
	}
	return env
}

// requireSocketsOf requires that exactly the named members listen on a
// control socket in the world's state root.
func requireSocketsOf(t testing.TB, w *world, names ...string) {
	t.Helper()
	sockets, err := filepath.Glob(filepath.Join(w.stateDir, control.MemberSockets))
	require.NoError(t, err)
	want := make([]string, len(names))
	for i, name := range names {
		want[i] = filepath.Join(w.stateDir, control.MemberSocket(name))
	}
	require.ElementsMatch(t, want, sockets)
}

// received counts the message_received events with id in the
// committed life of the being named name.
func (w *world) received(t testing.TB, name, id string) int {
	t.Helper()
	b, ok := w.check(t)[name]
	require.True(t, ok, "being %s", name)
	life, _ := judge(t, b.dir, b.rec)
	n := 0
	for _, e := range life {
		if e.Type == state.EventMessageReceived && e.ID == id {
			n++
		}
	}
	return n
}
