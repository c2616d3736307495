package examplelas

import (
	"os"
	"runtime"
	"runtime/debug"
	"syscall"
)

// The runtime settings of the example Las as a process (Main, never Run,
// which tests call in their own process). A Las serves one client, one
// request at a time, from one pipe, so one P is enough: with it the SDK's
// hand-offs between its reading, queueing and handler goroutines stay on
// one thread instead of waking another core, and the round trip is
// shorter, not longer. Its live heap is under 1 MB, so the default GC
// percent would let the heap swing up to the 4 MB minimum goal with the
// SDK's 64 KB of garbage per tools/call; at gcPercent it swings up to
// 1 MB. Measured with BenchmarkPairRSS (actors/las): about 2.5 MB less resident
// memory per process, the round trip within the noise. GOMAXPROCS and
// GOGC in the environment still win.
const (
	maxProcs  = 1
	gcPercent = 25
)

// tune applies those settings unless getenv names the variable.
func tune(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(maxProcs)
	}
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// pollable returns f made non-blocking when it is a pipe, so that its
// reads wait in the runtime's poller (the goroutine parked, no thread
// held in read(2) that the one P must be taken back from) and Close
// ends a read in progress. A terminal or a file is left as it is: its
// blocking mode is shared with whoever else holds it.
func pollable(f *os.File) *os.File {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return f
	}
	fd := int(f.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return f
	}
	return os.NewFile(uintptr(fd), f.Name())
}
