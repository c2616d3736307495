package mcpstdio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/keeper"
	"github.com/wisent/singularity/test/testkit"
)

// TestReapLeftoversSharesSweeps: calls made while a sweep runs wait for
// one sweep that begins after them, which they share; none returns on
// the sweep that was already running when it was made.
func TestReapLeftoversSharesSweeps(t *testing.T) {
	const callers = 40
	running := make(chan struct{})
	release := make(chan struct{})
	waiting := make(chan struct{}, callers)
	var mu sync.Mutex
	var swept []int // the sweeps, by the number of calls made when each began
	made := 0
	t.Cleanup(func() {
		sweeps.Lock()
		sweeps.sweep, sweeps.waiting = sweepLeftovers, nil
		sweeps.Unlock()
	})
	sweeps.Lock()
	sweeps.sweep = func() int {
		mu.Lock()
		swept = append(swept, made)
		first := len(swept) == 1
		mu.Unlock()
		if first {
			close(running)
			<-release
		}
		return 0
	}
	sweeps.waiting = func() { waiting <- struct{}{} }
	sweeps.Unlock()

	returned := make(chan int, callers+1)
	call := func(n int) {
		mu.Lock()
		made++
		mu.Unlock()
		reapLeftovers()
		returned <- n
	}
	deadline := time.After(10 * time.Second)
	go call(0)
	select {
	case <-running:
	case <-deadline:
		t.Fatal("the first call did not sweep")
	}
	for n := 1; n <= callers; n++ {
		go call(n)
	}
	for range callers {
		select {
		case <-waiting:
		case <-deadline:
			t.Fatal("the calls made during a sweep did not wait for the next")
		}
	}
	select {
	case n := <-returned:
		t.Fatalf("call %d returned while the first sweep ran", n)
	default:
	}
	close(release)
	for range callers + 1 {
		select {
		case <-returned:
		case <-deadline:
			t.Fatal("a call did not return")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{1, callers + 1}, swept, "the running sweep, then one for all %d calls made during it", callers)
}

// TestSweepsNeverReapAStartingServer: while leftovers are swept without
// pause, as when a family's Las all restart at once, many servers start,
// answer and stop, by themselves or under a keeper; each one lives until
// its own session stops it, and none is reaped by a sweep (the session
// would then end with "waitid: no child processes" or "signal: killed"
// moments after its start).
func TestSweepsNeverReapAStartingServer(t *testing.T) {
	if err := BecomeSubreaper(); err != nil {
		t.Skipf("this process cannot be a child subreaper: %v", err)
	}
	for _, tc := range []struct {
		name   string
		keeper bool
	}{
		{"its own process", false},
		{"under a keeper", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fakeServerConfig(t)
			if tc.keeper {
				bin := testkit.Build(t, "./cmd/singularity-keeper")
				cfg.Args = []string{keeper.Command, strconv.Itoa(os.Getpid()), cfg.Path}
				cfg.Path, cfg.DeathSignal, cfg.Keeper = bin, keeper.DeathSignal, true
			}
			startStorm(t, cfg)
		})
	}
}

// startStorm starts, pings and stops servers of cfg on several workers
// at once while two sweepers sweep leftovers without pause, and fails t
// for each server that did not live until its session stopped it.
func startStorm(t *testing.T, cfg Config) {
	const workers, rounds = 8, 8
	cfg.Timeout, cfg.ShutdownGrace, cfg.TermGrace = 10*time.Second, 10*time.Second, 2*time.Second

	stop := make(chan struct{})
	var sweepers sync.WaitGroup
	for range 2 {
		sweepers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					reapLeftovers()
				}
			}
		})
	}
	failures := make(chan error, workers*rounds)
	var starters sync.WaitGroup
	for w := range workers {
		starters.Go(func() {
			for r := range rounds {
				if err := startPingClose(cfg); err != nil {
					failures <- fmt.Errorf("server %d of worker %d: %w", r, w, err)
				}
			}
		})
	}
	finished := make(chan struct{})
	go func() {
		starters.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(3 * time.Minute):
		t.Fatal("the servers did not all start and stop within 3 minutes")
	}
	close(stop)
	sweepers.Wait()
	close(failures)
	for err := range failures {
		t.Error(err)
	}
}

// startPingClose starts a server, pings it, checks that its session is
// still up and stops it with the shutdown ladder.
func startPingClose(cfg Config) error {
	s, err := Start(cfg)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	defer s.Close(errors.New("the test is done with it"))
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	if err := s.Ping(ctx)(); err != nil {
		return fmt.Errorf("pid %d did not answer ping: %w", s.PID(), err)
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("pid %d answered, then its session ended: %w", s.PID(), err)
	}
	return nil
}

// TestSweepEndsOnlyLeftovers: a sweep kills and reaps a child that leads
// a group no session leads, and leaves a server alone.
func TestSweepEndsOnlyLeftovers(t *testing.T) {
	if err := BecomeSubreaper(); err != nil {
		t.Skipf("this process cannot be a child subreaper: %v", err)
	}
	cfg := fakeServerConfig(t)
	cfg.Timeout, cfg.ShutdownGrace, cfg.TermGrace = 10*time.Second, 10*time.Second, 2*time.Second
	s, err := Start(cfg)
	require.NoError(t, err)
	defer s.Close(errors.New("the test is done with it"))

	leftover := exec.Command("sleep", "60")
	leftover.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, leftover.Start())
	pid := leftover.Process.Pid

	reapLeftovers()
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the leftover was killed and reaped")
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	require.NoError(t, s.Ping(ctx)(), "the server lives on")
}

// TestTrackGroupCountsSessions: a group number is live while any session
// that tracked it has not untracked it, so that a session untracking the
// number of its reaped leader never untracks a new server that got the
// same number.
func TestTrackGroupCountsSessions(t *testing.T) {
	const pgid = -12345 // no real group's number
	t.Cleanup(func() {
		liveGroups.Lock()
		delete(liveGroups.pgids, pgid)
		liveGroups.Unlock()
	})
	trackGroup(pgid)   // the old server
	trackGroup(pgid)   // a new one given the same number
	untrackGroup(pgid) // the old one's session has reaped it
	require.True(t, groupLive(pgid), "the new server's group is still live")
	untrackGroup(pgid)
	require.False(t, groupLive(pgid))
}
