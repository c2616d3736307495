package cluster

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// operate runs `singularity fund` or `say` on the world's state root,
// with nothing of the cluster in its environment: it finds the members
// by their sockets. It may be called from any goroutine; the command
// is killed past waitLimit.
func (w *world) operate(t testing.TB, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, args...)
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
	members := w.startNamed(t, names)
	require.True(t, w.seen.until(waitLimit, func(now map[string]int) bool {
		return now[rootName] >= 2 && now[grandchildParent] >= 1
	}), "the root and Bo cycled")
	for _, name := range names {
		info, err := os.Stat(filepath.Join(w.stateDir, control.MemberSocket(name)))
		require.NoError(t, err, name)
		assert.Equal(t, os.ModeSocket, info.Mode().Type())
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	}

	w.fundAndSay(t, "c", "hello from the operator")

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
	_, err := os.Stat(filepath.Join(w.stateDir, control.MemberSocket(victim)))
	require.NoError(t, err, "the killed member left its socket")
	out, err := w.operate(t, "fund", "--being", grandchildParent, "0.125", "--key", "c-bo-after-kill")
	require.NoError(t, err, errText(err))
	assert.Regexp(t, `^funded Bo 0\.125 USD \(key c-bo-after-kill\); `, out)

	stopInTurn(t, survivor)
	funded, ledger := w.funded(t)
	assert.Equal(t, "0.875", funded)
	assert.Equal(t, "exact", ledger)
	_, err = os.Stat(filepath.Join(w.stateDir, control.MemberSocket(survivor.name)))
	assert.ErrorIs(t, err, os.ErrNotExist, "a member that stops removes its socket")
}

// startNamed starts a spread family's members, one per name
// (startSpread).
func (w *world) startNamed(t testing.TB, names []string) []*proc {
	t.Helper()
	started := 0
	return w.startSpread(t, len(names), func() *proc {
		p := w.start(names[started])
		started++
		return p
	})
}

// funded is the family's funded total and its ledger's verdict, as its
// commit records count them.
func (w *world) funded(t testing.TB) (funded, ledger string) {
	t.Helper()
	var report struct {
		Totals struct {
			Funded string `json:"funded"`
		} `json:"totals"`
		FamilyLedger string `json:"family_ledger"`
	}
	require.NoError(t, json.Unmarshal(w.runStatus(t, "--format", "json"), &report))
	return report.Totals.Funded, report.FamilyLedger
}

// fundAndSay is the operator's exchange with a running family, its
// keys starting with prefix: it funds the root 0.5 USD and Bo 0.25 USD,
// sends Bo's fund again under the same key with another amount (not
// applied), and says text to the root. 0.75 USD is funded.
func (w *world) fundAndSay(t testing.TB, prefix, text string) {
	t.Helper()
	out, err := w.operate(t, "fund", "0.5", "--key", prefix+"-root")
	require.NoError(t, err, errText(err))
	assert.Regexp(t, `^funded `+rootName+` 0\.5 USD \(key `+prefix+`-root\); remaining \S+ USD\n$`, out)
	bo, err := w.operate(t, "fund", "--being", grandchildParent, "0.25", "--key", prefix+"-bo")
	require.NoError(t, err, errText(err))
	assert.Regexp(t, `^funded Bo 0\.25 USD \(key `+prefix+`-bo\); remaining \S+ USD\n$`, bo)
	again, err := w.operate(t, "fund", "--being", grandchildParent, "3", "--key", prefix+"-bo")
	require.NoError(t, err, errText(err))
	assert.Equal(t, bo, again, "the same key is not applied twice")
	said, err := w.operate(t, "say", "--key", prefix+"-say", text)
	require.NoError(t, err, errText(err))
	assert.Equal(t, "said to "+rootName+" (key "+prefix+"-say)\n", said)
}

func errText(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// TestFundRevivesAnEndedBeing: in a spread family a child endowed too
// little for one completion ends exhausted at once, and its member
// records its end (ended/<child>); a fund to it reaches a member, which
// journals it under the child's own lock in a step whose commit takes
// the end away, and the child is placed again and lives: it asks the
// gateway. The family's ledger stays exact with the fund in it.
func TestFundRevivesAnEndedBeing(t *testing.T) {
	w := newWorld(t)
	w.spreadOut()
	w.seedGrant = "0.0001"
	w.seed(len(familyNames) + 1)
	const child = "S000"
	dirs, err := filepath.Glob(filepath.Join(w.stateDir, "children", "*"))
	require.NoError(t, err)
	require.Len(t, dirs, 1)
	id := filepath.Base(dirs[0])
	ended := w.watchPut(t, "ended/"+id)
	members := w.startNamed(t, []string{"alpha", "beta"})
	select {
	case status := <-ended:
		require.Equal(t, state.StatusExhausted, status)
	case <-time.After(waitLimit):
		t.Fatalf("the child's end was not recorded within %s", waitLimit)
	}
	before, _ := w.seen.snapshot()
	require.Zero(t, before[child], "the child could not pay for a completion")

	out, err := w.operate(t, "fund", "--being", child, "1", "--key", "wake")
	require.NoError(t, err, errText(err))
	assert.Equal(t, "funded "+child+" 1 USD (key wake); remaining 1.0001 USD\n", out)
	require.True(t, w.seen.until(waitLimit, func(now map[string]int) bool { return now[child] >= 1 }), "the funded child lives again")
	client := w.etcd.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	resp, err := client.Get(ctx, fence.Root+familyName+"/ended/"+id)
	cancel()
	require.NoError(t, err)
	assert.Empty(t, resp.Kvs, "its end is taken away")

	stopInTurn(t, members...)
	funded, ledger := w.funded(t)
	assert.Equal(t, "1", funded)
	assert.Equal(t, "exact", ledger)
}

// TestFundWakesAChildOfAWholeFamily: on a member holding the whole
// family, where each being loads once a hold, a child endowed too
// little for one completion ends exhausted in its first cycle; a fund
// to it through the member's socket makes it live again at once, in the
// same hold: it asks the gateway, status shows it running, and the
// member never held the family anew (one "holds the family" line, no
// refused step). The family's ledger stays exact with the fund in it.
func TestFundWakesAChildOfAWholeFamily(t *testing.T) {
	w := newWorld(t)
	w.seedGrant = "0.0001"
	w.seed(len(familyNames) + 1)
	const child = "S000"
	holder := w.start("m1")
	holder.await(t, "this member holds the family", waitLimit)
	require.True(t, holder.lines.AwaitAll(waitLimit, "being="+child+" ", "status=exhausted"),
		"the child did not end exhausted; stderr:\n%s", holder.lines.Tail())
	before, _ := w.seen.snapshot()
	require.Zero(t, before[child], "the child could not pay for a completion")

	out, err := w.operate(t, "fund", "--being", child, "1", "--key", "wake", "--timeout", "20s")
	require.NoError(t, err, errText(err))
	assert.Equal(t, "funded "+child+" 1 USD (key wake); remaining 1.0001 USD\n", out)
	require.True(t, w.seen.until(waitLimit, func(now map[string]int) bool { return now[child] >= 1 }), "the funded child lives again")
	var report struct {
		Beings []struct {
			Name, Status string
		} `json:"beings"`
	}
	require.NoError(t, json.Unmarshal(w.runStatus(t, "--format", "json"), &report))
	status := map[string]string{}
	for _, b := range report.Beings {
		status[b.Name] = b.Status
	}
	assert.Equal(t, state.StatusRunning, status[child])
	assert.Equal(t, 1, holder.lines.Count("this member holds the family"), "the member held the family once")
	assert.Zero(t, holder.lines.Count("a step was refused"))

	stopInTurn(t, holder)
	funded, ledger := w.funded(t)
	assert.Equal(t, "1", funded)
	assert.Equal(t, "exact", ledger)
}
