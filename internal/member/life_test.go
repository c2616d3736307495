package member

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/wisent/singularity/internal/store/state"
)

func TestAfterJoin(t *testing.T) {
	etcd := errors.New("context deadline exceeded")
	for _, c := range []struct {
		name string
		err  error
		late bool
		want JoinStep
	}{
		{"joined", nil, false, Joined},
		{"joined late", nil, true, Joined},
		{"name taken by its own old lease", fmt.Errorf("join: %w", ErrNameTaken), false, JoinAgain},
		{"name taken past the old lease", fmt.Errorf("join: %w", ErrNameTaken), true, JoinRefused},
		{"another root", fmt.Errorf("x: %w", ErrAnotherRoot), false, JoinRefused},
		{"another family", ErrAnotherFamily, false, JoinRefused},
		{"another protocol", ErrProtocol, false, JoinRefused},
		{"another placement", ErrPlacement, false, JoinRefused},
		{"etcd failed", etcd, false, JoinFailed},
	} {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, AfterJoin(c.err, c.late)) })
	}
}

func TestOnSignal(t *testing.T) {
	for _, c := range []struct {
		spread bool
		n      int
		want   SignalStep
	}{
		{false, 1, SignalStep{Ask: AskHandOver, Hurry: true}},
		{false, 2, SignalStep{Ask: AskNow, GiveUp: true}},
		{false, 3, SignalStep{Ask: AskNow, GiveUp: true}},
		{true, 1, SignalStep{Ask: AskHandOver, Hurry: true}},
		{true, 2, SignalStep{Ask: AskStop}},
		{true, 3, SignalStep{Ask: AskNow, GiveUp: true}},
		{true, 7, SignalStep{Ask: AskNow, GiveUp: true}},
	} {
		assert.Equal(t, c.want, OnSignal(c.spread, c.n), "spread %v, signal %d", c.spread, c.n)
	}
	for _, spread := range []bool{false, true} {
		step, rearm := Hurried(spread)
		assert.Equal(t, SignalStep{Ask: AskNow, GiveUp: true}, step)
		assert.Equal(t, spread, rearm)
	}
}

func TestAfterStop(t *testing.T) {
	failure := errors.New("the gateway failed")
	refused := errors.New("step refused")
	for _, c := range []struct {
		name      string
		signalled bool
		refused   error
		status    string
		err       error
		want      Stopped
	}{
		{"exhausted: the family ends", false, nil, state.StatusExhausted, nil, Stopped{Summarize: true, EndFamily: true}},
		{"failed here: handed over with the error", false, nil, state.StatusFailed, failure, Stopped{Summarize: true, Err: failure}},
		{"stopped here: handed over", false, nil, state.StatusStopped, nil, Stopped{Summarize: true}},
		{"refused: rejoin", false, refused, state.StatusExhausted, nil, Stopped{Rejoin: true}},
		{"signalled: handed over", true, nil, state.StatusStopped, nil, Stopped{Summarize: true}},
		{"signalled, exhausted: not ended", true, nil, state.StatusExhausted, nil, Stopped{Summarize: true}},
		{"signalled, failed to stop", true, nil, state.StatusFailed, failure, Stopped{Summarize: true, Err: failure}},
		{"signalled, refused: no summary, no error", true, refused, state.StatusFailed, failure, Stopped{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, AfterStop(c.signalled, c.refused, c.status, c.err))
		})
	}
}
