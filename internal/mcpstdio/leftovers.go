package mcpstdio

import (
	"os"
	"strconv"
	"sync"
	"syscall"

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
// server leads its own group): their members are not leftovers.
var liveGroups = struct {
	sync.Mutex
	pgids map[int]bool
}{pgids: map[int]bool{}}

func trackGroup(pgid int) {
	liveGroups.Lock()
	defer liveGroups.Unlock()
	liveGroups.pgids[pgid] = true
}

func untrackGroup(pgid int) {
	liveGroups.Lock()
	defer liveGroups.Unlock()
	delete(liveGroups.pgids, pgid)
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
func sweepLeftovers() int {
	subreaper.Lock()
	on := subreaper.on
	subreaper.Unlock()
	if !on {
		return 0
	}
	self, own := os.Getpid(), syscall.Getpgrp()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, pgid, ok := keeper.ProcParent(pid)
		if !ok || ppid != self || pgid == own {
			continue
		}
		liveGroups.Lock()
		live := liveGroups.pgids[pgid]
		liveGroups.Unlock()
		if live {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		n++
	}
	return n
}
