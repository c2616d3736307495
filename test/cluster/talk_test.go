package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/state"
)

// TestRelativesTalkAcrossMembers: in a family spread over two members
// with the family tools, on its third cycle the root messages Bo and
// every other being its parent (the simulated Brama's script). Two
// members hold two beings each, so at least one of the four messages
// crosses members, through the receiver's member's control socket.
// Each is received exactly once, by the being it was sent to, and its
// sender journals it delivered once.
func TestRelativesTalkAcrossMembers(t *testing.T) {
	w := newWorld(t)
	w.spreadOut()
	w.env["SINGULARITY_FAMILY_TOOLS"] = "1"
	names := []string{"alpha", "beta"}
	started := 0
	members := w.startSpread(t, len(names), func() *proc {
		p := w.start(names[started])
		started++
		return p
	})
	// Past the talk cycle, the receivers' next framing carries the
	// messages: each being's sixth cycle at least (five rounds a cycle
	// at most).
	require.True(t, w.seen.until(2*waitLimit, func(now map[string]int) bool {
		for _, name := range familyNames {
			if now[name] < 30 {
				return false
			}
		}
		return true
	}), "every being lived past its talk cycle")
	placed := w.placedOn(t)
	stopInTurn(t, members...)

	beings := w.check(t)
	byID := map[string]string{}
	idOf := map[string]string{}
	for name, b := range beings {
		id := member.BeingID(w.stateDir, b.dir)
		byID[id], idOf[name] = name, id
	}
	type sent struct{ from, to string }
	sends := map[string]sent{}
	received := map[string][]string{}
	delivered := map[string]int{}
	for name, b := range beings {
		life, _ := judge(t, b.dir, b.rec) // the committed life
		for _, e := range life {
			switch e.Type {
			case state.EventMessageSent:
				sends[e.ID] = sent{from: name, to: e.To}
			case state.EventMessageReceived:
				received[e.ID] = append(received[e.ID], name)
			case state.EventMessageDelivered:
				delivered[e.ID]++
			}
		}
	}
	require.Len(t, sends, 4, "Ada→Bo, Bo→Ada, Cy→Ada, Di→Bo")
	across := 0
	for id, s := range sends {
		// A child's To is its parent's id: the root's is the agent id.
		to := byID[s.to]
		if to == "" {
			to = rootName
		}
		assert.Equal(t, []string{to}, received[id], "%s's message %s to %s received once, by it", s.from, id, to)
		assert.Equal(t, 1, delivered[id], "%s journaled %s delivered once", s.from, id)
		if placed[idOf[s.from]] != placed[idOf[to]] {
			across++
		}
	}
	t.Logf("placement %v: %d of %d messages crossed members", placed, across, len(sends))
	assert.Positive(t, across, "two beings a member: a message crosses members")
	for name, b := range beings {
		assert.Empty(t, b.st.Outbox, "%s's outbox", name)
	}
}
