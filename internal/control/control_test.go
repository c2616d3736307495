package control

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseAmount(t *testing.T) {
	tests := []struct {
		in, want, refusal string
	}{
		{"5", "5", ""},
		{"0.25", "0.25", ""},
		{".5", "0.5", ""},
		{"1000000", "1000000", ""},
		{"0.000000000001", "0.000000000001", ""},
		{"0", "", "is not above 0 USD"},
		{"0.000", "", "is not above 0 USD"},
		{"-1", "", "is not a decimal"},
		{"+1", "", "is not a decimal"},
		{"1e3", "", "is not a decimal"},
		{"abc", "", "is not a decimal"},
		{"", "", "is not a decimal"},
		{" 1", "", "is not a decimal"},
		{"NaN", "", "is not a decimal"},
		{"0.0000000000001", "", "has 13 decimal places; at most 12"},
		{"1.0000000000000", "", "has 13 decimal places"},
		{"1000000.000000000001", "", "is above the most one fund adds, 1000000 USD"},
		{"99999999999999999999999", "", "is above the most one fund adds"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseAmount(tc.in)
			if tc.refusal != "" {
				require.ErrorIs(t, err, ErrRefused)
				assert.Contains(t, err.Error(), tc.refusal)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.String())
		})
	}
}

func TestCheckKeyAndText(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"key of 128 bytes", CheckKey(strings.Repeat("k", 128)), ""},
		{"key of 129 bytes", CheckKey(strings.Repeat("k", 129)), "129 bytes long; at most 128"},
		{"key with a newline", CheckKey("a\nb"), "without control characters"},
		{"key not UTF-8", CheckKey("\xff"), "UTF-8"},
		{"text of 8 KiB", CheckText(strings.Repeat("é", 4096)), ""},
		{"text over 8 KiB", CheckText(strings.Repeat("x", 8193)), "8193 bytes long; at most 8192"},
		{"empty text", CheckText("  \n"), "the message is empty"},
		{"text not UTF-8", CheckText("a\xffb"), "not UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				require.NoError(t, tc.err)
				return
			}
			require.ErrorIs(t, tc.err, ErrRefused)
			assert.Contains(t, tc.err.Error(), tc.want)
		})
	}
	assert.Len(t, NewKey(), 24)
	assert.NotEqual(t, NewKey(), NewKey())
}

func being(status string) *state.Being {
	st := &state.Being{Identity: state.Identity{Name: "Ada"}, Status: status}
	st.Budget = state.Budget{Starting: testkit.USD("1"), Remaining: testkit.USD("0.001"), APISpent: testkit.USD("0.999")}
	return st
}

func TestDecide(t *testing.T) {
	at := state.Now()
	fund := Request{Op: OpFund, Amount: testkit.USD("2"), Key: "k1", Note: "rent"}
	say := Request{Op: OpSay, Key: "m1", Text: "hello"}

	st := being(state.StatusExhausted)
	e, err := Decide(st, fund, at)
	require.NoError(t, err)
	require.NotNil(t, e)
	assert.Equal(t, state.Funded(at, 0, testkit.USD("2"), "k1", "rent"), *e)
	st.Apply(*e)
	assert.Equal(t, Reply{Name: "Ada", Key: "k1", Amount: testkit.USD("2"), Remaining: testkit.USD("2.001")}, Answer(st, fund, false))
	assert.Equal(t, state.StatusStopped, st.Status, "the fund un-ends an exhausted being")

	again := fund
	again.Amount = testkit.USD("9")
	e, err = Decide(st, again, at)
	require.NoError(t, err)
	assert.Nil(t, e, "a key applied before writes nothing")
	assert.Equal(t, Reply{Name: "Ada", Key: "k1", Amount: testkit.USD("2"), Remaining: testkit.USD("2.001"), Duplicate: true}, Answer(st, again, true))

	e, err = Decide(st, say, at)
	require.NoError(t, err)
	assert.Equal(t, state.MessageReceived(at, 0, state.InMessage{ID: "m1", From: state.FromOperator, Text: "hello"}), *e)
	st.Apply(*e)
	e, err = Decide(st, say, at)
	require.NoError(t, err)
	assert.Nil(t, e, "a message id received before writes nothing")
	e, err = Decide(st, Request{Op: OpRelay, Key: "r1", Text: "hi", From: "c-1", Name: "Bo", Relation: "child"}, at)
	require.NoError(t, err)
	require.NotNil(t, e)
	assert.Equal(t, state.MessageReceived(at, st.Cycle, state.InMessage{ID: "r1", From: "c-1", Name: "Bo", Relation: "child", Text: "hi"}), *e, "a relayed message keeps its sender")

	_, err = Decide(being(state.StatusFailed), fund, at)
	require.ErrorIs(t, err, ErrRefused)
	assert.Equal(t, "Ada has failed, and a failed being is not revived by a fund; nothing was added", err.Error())

	for _, bad := range []Request{
		{Op: OpFund, Amount: money.Zero, Key: "k"},
		{Op: OpFund, Amount: testkit.USD("1000001"), Key: "k"},
		{Op: OpFund, Amount: testkit.USD("1")},
		{Op: OpSay, Key: "k"},
		{Op: OpRelay, Key: "k", Text: "hi", Relation: "child"},
		{Op: OpRelay, Key: "k", Text: "hi", From: "c-1", Relation: "sibling"},
		{Op: "grant", Key: "k"},
	} {
		_, err := Decide(st, bad, at)
		assert.ErrorIs(t, err, ErrRefused, "%+v", bad)
	}
}

// newBeing writes a being's first state in a fresh directory.
func newBeing(t *testing.T, status string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	st := being(status)
	st.SchemaVersion = state.SchemaVersion
	st.Identity = testkit.Identity()
	st.JournalSeq = new(uint64)
	_, _, _, err := state.Boot(dir, false, st.Identity, func() (*state.Being, error) { return st, nil })
	require.NoError(t, err)
	return dir
}

// TestApplyUnderTheLock: with no runtime, Apply journals the fund and a
// checkpoint; a key seen before writes nothing; a directory a runtime
// holds is refused with state.ErrInUse and left alone.
func TestApplyUnderTheLock(t *testing.T) {
	dir := newBeing(t, state.StatusExhausted)
	fund := Request{Op: OpFund, Amount: testkit.USD("0.5"), Key: "k1"}
	r, err := Apply(dir, fund, nil, state.Now)
	require.NoError(t, err)
	assert.Equal(t, "0.501", r.Remaining.String())
	assert.False(t, r.Duplicate)
	st, err := state.Load(dir)
	require.NoError(t, err)
	assert.Equal(t, state.StatusStopped, st.Status, "the checkpoint is written")
	assert.Equal(t, "0.5", st.Budget.Funded.String())

	before := testkit.Snapshot(t, dir)
	r, err = Apply(dir, fund, nil, state.Now)
	require.NoError(t, err)
	assert.True(t, r.Duplicate)
	assert.Equal(t, "0.501", r.Remaining.String())
	assert.Equal(t, before, testkit.Snapshot(t, dir))

	lock, err := state.LockDir(dir)
	require.NoError(t, err)
	_, err = Apply(dir, Request{Op: OpFund, Amount: testkit.USD("1"), Key: "k2"}, nil, state.Now)
	require.ErrorIs(t, err, state.ErrInUse)
	lock.Unlock()
	assert.Equal(t, before, testkit.Snapshot(t, dir))
	events, err := state.ReadAll(dir)
	require.NoError(t, err)
	require.Len(t, events, 1)
	assert.Equal(t, "0.5", state.Totals(events).Funded.String())
}

// TestAskAndListen: a request goes to the handler and its reply comes
// back; a socket nobody accepts on (a killed runtime's) and no socket
// at all are ErrNoRuntime at once.
func TestAskAndListen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, SocketName)
	_, err := Ask(path, Request{}, time.Second)
	require.ErrorIs(t, err, ErrNoRuntime)

	got := make(chan Request, 1)
	srv, err := Listen(path, time.Second, func(_ context.Context, req Request) Reply {
		got <- req
		return Reply{Name: "Ada", Key: req.Key, Amount: req.Amount}
	})
	require.NoError(t, err)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	req := Request{Op: OpFund, Being: ".", Amount: testkit.USD("1.5"), Key: "k"}
	r, err := Ask(path, req, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, Reply{Name: "Ada", Key: "k", Amount: testkit.USD("1.5")}, r)
	assert.Equal(t, req, <-got)
	r, err = Ask(path, Request{Op: OpFund, Key: "k"}, 5*time.Second)
	require.NoError(t, err)
	assert.Contains(t, r.Refusal, "is not above 0", "the server checks what it is sent")
	srv.Close()

	// A killed runtime's socket: the file stays, nothing accepts.
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, ln.Close())
	_, err = os.Stat(path)
	require.NoError(t, err)
	start := time.Now()
	_, err = Ask(path, Request{}, 5*time.Second)
	require.ErrorIs(t, err, ErrNoRuntime)
	assert.Less(t, time.Since(start), time.Second)
	// A new runtime replaces it.
	srv, err = Listen(path, time.Second, func(context.Context, Request) Reply { return Reply{Busy: true} })
	require.NoError(t, err)
	r, err = Ask(path, Request{Op: OpSay, Key: "m", Text: "hi"}, 5*time.Second)
	require.NoError(t, err)
	assert.True(t, r.Busy)
	srv.Close()
	_, err = os.Stat(path)
	assert.True(t, errors.Is(err, os.ErrNotExist), "Close removes the socket")
}
