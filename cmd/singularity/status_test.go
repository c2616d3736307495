package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/wisent/singularity/internal/store/state"
)

func TestBeingsAgrees(t *testing.T) {
	for n, want := range map[int]string{0: "0 beings", 1: "1 being", 2: "2 beings", 10001: "10001 beings"} {
		assert.Equal(t, want, beings(n))
	}
}

// TestStatusWordShowsTheSleep: a running being that sleeps is shown
// sleeping until its time, a stopped one as stopped and sleeping (it
// sleeps on once resumed), an ended one as ended; the tier follows.
func TestStatusWordShowsTheSleep(t *testing.T) {
	sleep := &state.Sleep{Until: state.Time{Time: time.Date(2026, 12, 7, 22, 0, 0, 0, time.UTC)}, WakeOnMessage: true}
	for _, tc := range []struct {
		st   state.Being
		want string
	}{
		{state.Being{Status: state.StatusRunning}, "running"},
		{state.Being{Status: state.StatusRunning, Sleep: sleep}, "sleeping until 2026-12-07T22:00:00Z"},
		{state.Being{Status: state.StatusRunning, Sleep: sleep, Tier: 2}, "sleeping until 2026-12-07T22:00:00Z, tier 2"},
		{state.Being{Status: state.StatusStopped, Sleep: sleep}, "stopped, sleeping until 2026-12-07T22:00:00Z"},
		{state.Being{Status: state.StatusExhausted, Sleep: sleep}, "exhausted"},
	} {
		if got := statusWord(&tc.st); got != tc.want {
			t.Errorf("%s with sleep %v: %q, want %q", tc.st.Status, tc.st.Sleep, got, tc.want)
		}
	}
}
