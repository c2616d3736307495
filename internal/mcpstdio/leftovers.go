package mcpstdio

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/wisent/singularity/internal/keeper"
)

// subreaper is set once this process is a child subreaper.
var subreaper struct {
	sync.Mutex
	on bool
}

// BecomeSubreaper makes this process the child subreaper of everything it
// starts (docs/las.md#leftovers): a descendant of a server that leaves its
// process group (setsid) and outlives its parent is reparented here
// instead of to init, and is killed and reaped when its session ends. The
// runtime calls it once at start; it returns prctl's error where prctl
// refuses, and doing without is then harmless.
func BecomeSubreaper() error {
	subreaper.Lock()
	defer subreaper.Unlock()
	if subreaper.on {
		return nil
	}
	if err := keeper.Subreaper(); err != nil {
		return err
	}
	subreaper.on = true
	return nil
}

// liveGroups are the process groups of the servers alive now (each
// server leads its own group): their members are not leftovers. A
// group is counted once for each session that leads it, so that a
// session untracking a group after reaping its leader never untracks a
// new server the kernel gave the same number in the meantime.
var liveGroups = struct {
	sync.Mutex
	pgids map[int]int
}{pgids: map[int]int{}}

// starts is held shared by each start from before its fork until its
// group is tracked, and alone by a sweep while it chooses leftovers: a
// child that is starting already leads its own group, untracked, and a
// sweep must never take it for a leftover and reap it from under its
// session (docs/las.md#leftovers).
var starts sync.RWMutex

// startTracked starts cmd, whose process leads a group of its own, and
// tracks that group before any sweep can see the process. Only cmd.Wait,
// the session's own, ever reaps it.
func startTracked(cmd *exec.Cmd) error {
	starts.RLock()
	defer starts.RUnlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	trackGroup(cmd.Process.Pid)
	return nil
}

func trackGroup(pgid int) {
	liveGroups.Lock()
	defer liveGroups.Unlock()
	liveGroups.pgids[pgid]++
}

func untrackGroup(pgid int) {
	liveGroups.Lock()
	defer liveGroups.Unlock()
	if liveGroups.pgids[pgid]--; liveGroups.pgids[pgid] <= 0 {
		delete(liveGroups.pgids, pgid)
	}
}

func groupLive(pgid int) bool {
	liveGroups.Lock()
	defer liveGroups.Unlock()
	return liveGroups.pgids[pgid] > 0
}

// reapLeftovers kills and reaps the leftovers of stopped servers (see
// sweepLeftovers). One sweep reads every process in /proc, so calls
// made while a sweep runs share the next one: each call returns after a
// whole sweep that began after it was made, and a family stopping
// hundreds of servers at once sweeps a few times instead of once each.
func reapLeftovers() {
	sweeps.Lock()
	defer sweeps.Unlock()
	due := sweeps.begun + 1 // the first sweep to begin after this call
	for sweeps.ended < due {
		if sweeps.running {
			if sweeps.waiting != nil {
				sweeps.waiting()
			}
			sweeps.changed.Wait()
			continue
		}
		sweeps.running = true
		sweeps.begun++
		n := sweeps.begun
		sweeps.Unlock()
		sweeps.sweep()
		sweeps.Lock()
		sweeps.running = false
		sweeps.ended = n
		sweeps.changed.Broadcast()
	}
}

// sweeps is the state of reapLeftovers: sweeps are numbered in the
// order they begin, and ended is the number of the last one that ended.
var sweeps = func() *sweepState {
	s := &sweepState{sweep: sweepLeftovers}
	s.changed = sync.NewCond(&s.Mutex)
	return s
}()

type sweepState struct {
	sync.Mutex
	changed      *sync.Cond
	running      bool
	begun, ended uint64
	sweep        func() int
	waiting      func() // a test's hook: a call waits for the next sweep
}

// sweepLeftovers kills and reaps the leftovers of stopped servers:
// children of this process (a subreaper) that lead no live server group and
// are not in this process's own group (the runtime's own helpers stay
// there). It returns how many it ended. Without BecomeSubreaper no
// descendant is ever reparented here and it does nothing.
//
// The leftovers are chosen while no server is starting (starts), so a
// server is never one of them; once chosen, a leftover is this
// process's child, which no session waits for, so it keeps its number
// until the sweep reaps it. A leftover not reaped within killWait (a
// process stuck in the kernel) is left for the next sweep.
func sweepLeftovers() int {
	subreaper.Lock()
	on := subreaper.on
	subreaper.Unlock()
	if !on {
		return 0
	}
	found := chooseLeftovers()
	for _, pid := range found {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return reapWithin(found, killWait)
}

// chooseLeftovers lists the leftovers: the children of this process that
// lead no live server group and are outside this process's own group.
func chooseLeftovers() []int {
	starts.Lock()
	defer starts.Unlock()
	self, own := os.Getpid(), syscall.Getpgrp()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, pgid, ok := keeper.ProcParent(pid)
		if !ok || ppid != self || pgid == own || groupLive(pgid) {
			continue
		}
		found = append(found, pid)
	}
	return found
}

// reapPoll is how often reapWithin looks again for killed leftovers
// that have not exited yet.
const reapPoll = 2 * time.Millisecond

// reapWithin reaps the children pids, which were sent SIGKILL, waiting
// for them at most d, and returns how many it reaped. A pid that is no
// longer a child (ECHILD) counts as gone.
func reapWithin(pids []int, d time.Duration) int {
	deadline := time.Now().Add(d)
	n := 0
	for {
		left := pids[:0]
		for _, pid := range pids {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			switch {
			case errors.Is(err, syscall.EINTR), err == nil && got == 0:
				left = append(left, pid) // still running: look again
			default:
				n++
			}
		}
		pids = left
		if len(pids) == 0 || !time.Now().Before(deadline) {
			return n
		}
		time.Sleep(reapPoll)
	}
}
