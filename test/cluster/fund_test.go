package cluster

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/test/testkit"
)

// operate runs `singularity fund` or `say` on the world's state root,
// with nothing of the cluster in its environment: it finds the members
// by their sockets.
func (w *world) operate(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(w.bin, args...)
	cmd.Env = testkit.Environ(map[string]string{"PATH": os.Getenv("PATH"), "SINGULARITY_STATE_DIR": w.stateDir})
	out, err := cmd.Output()
	return string(out), err
}

// TestFundAndSayReachTheHolder: in a family spread over two members,
// each member listens on its own control socket in the shared root, and
// a fund or a message to a being reaches the member that holds it: the
// being journals it under its fence, a key is applied once, and the
// family's ledger, as its commit records count it, is exact with the
// funds in it. With the holder of a being SIGKILLed (its socket left
// behind), a fund to that being reaches it on the member that takes it
// over.
func TestFundAndSayReachTheHolder(t *testing.T) {
	w := newWorld(t)
	w.spreadOut()
	names := []string{"alpha", "beta"}
	started := 0
	members := w.startSpread(t, len(names), func() *proc {
		p := w.start(names[started])
		started++
		return p
	})
	require.True(t, w.seen.until(waitLimit, func(now map[string]int) bool {
		return now[rootName] >= 2 && now[grandchildParent] >= 1
	}), "the root and Bo cycled")
	for _, name := range names {
		info, err := os.Stat(filepath.Join(w.stateDir, control.MemberSocket(name)))
		require.NoError(t, err, name)
		assert.Equal(t, os.ModeSocket, info.Mode().Type())
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	}

	out, err := w.operate(t, "fund", "0.5", "--key", "c-root")
	require.NoError(t, err, errText(err))
	assert.Regexp(t, `^funded `+rootName+` 0\.5 USD \(key c-root\); remaining \S+ USD\n$`, out)
	bo, err := w.operate(t, "fund", "--being", grandchildParent, "0.25", "--key", "c-bo")
	require.NoError(t, err, errText(err))
	assert.Regexp(t, `^funded Bo 0\.25 USD \(key c-bo\); remaining \S+ USD\n$`, bo)
	again, err := w.operate(t, "fund", "--being", grandchildParent, "3", "--key", "c-bo")
	require.NoError(t, err, errText(err))
	assert.Equal(t, bo, again, "the same key is not applied twice")
	said, err := w.operate(t, "say", "--key", "c-say", "hello from the operator")
	require.NoError(t, err, errText(err))
	assert.Equal(t, "said to "+rootName+" (key c-say)\n", said)

	// The member holding Bo is SIGKILLed: its socket stays behind, and
	// the next fund to Bo waits for the survivor's takeover.
	victim := w.placedOn(t)[w.beingIDs(t)[grandchildParent]]
	require.NotEmpty(t, victim)
	var survivor *proc
	for _, m := range members {
		if m.name == victim {
			require.NoError(t, m.cmd.Process.Kill())
			m.wait(t, waitLimit)
		} else {
			survivor = m
		}
	}
	_, err = os.Stat(filepath.Join(w.stateDir, control.MemberSocket(victim)))
	require.NoError(t, err, "the killed member left its socket")
	out, err = w.operate(t, "fund", "--being", grandchildParent, "0.125", "--key", "c-bo-after-kill")
	require.NoError(t, err, errText(err))
	assert.Regexp(t, `^funded Bo 0\.125 USD \(key c-bo-after-kill\); `, out)

	stopInTurn(t, survivor)
	var report struct {
		Totals struct {
			Funded string `json:"funded"`
		} `json:"totals"`
		FamilyLedger string `json:"family_ledger"`
	}
	require.NoError(t, json.Unmarshal(w.runStatus(t, "--format", "json"), &report))
	assert.Equal(t, "0.875", report.Totals.Funded)
	assert.Equal(t, "exact", report.FamilyLedger)
	_, err = os.Stat(filepath.Join(w.stateDir, control.MemberSocket(survivor.name)))
	assert.ErrorIs(t, err, os.ErrNotExist, "a member that stops removes its socket")
}

func errText(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
