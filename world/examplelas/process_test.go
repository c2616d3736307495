package examplelas

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTuneDefersToTheEnvironment(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	gc := debug.SetGCPercent(100)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs); debug.SetGCPercent(gc) })
	for _, tt := range []struct {
		name     string
		env      map[string]string
		procs    int
		gcBefore int
	}{
		{"defaults", nil, maxProcs, gcPercent},
		{"GOMAXPROCS set", map[string]string{"GOMAXPROCS": "2"}, 2, gcPercent},
		{"GOGC set", map[string]string{"GOGC": "100"}, maxProcs, 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runtime.GOMAXPROCS(2)
			debug.SetGCPercent(100)
			tune(func(k string) string { return tt.env[k] })
			assert.Equal(t, tt.procs, runtime.GOMAXPROCS(0))
			assert.Equal(t, tt.gcBefore, debug.SetGCPercent(100))
		})
	}
}

func TestPollableStdinEndsAReadOnClose(t *testing.T) {
	// A pipe as a child gets it from os/exec: blocking, and not yet in
	// this process's poller.
	var fds [2]int
	require.NoError(t, syscall.Pipe2(fds[:], syscall.O_CLOEXEC))
	r, w := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "client")
	defer w.Close()
	p := pollable(r)
	read := make(chan error, 1)
	go func() {
		_, err := p.Read(make([]byte, 1))
		read <- err
	}()
	require.NoError(t, p.Close())
	select {
	case err := <-read:
		assert.ErrorIs(t, err, os.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the read")
	}
}

func TestPollableLeavesFilesAlone(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	defer f.Close()
	assert.Same(t, f, pollable(f))
	flags, err := fcntl(f)
	require.NoError(t, err)
	assert.Zero(t, flags&syscall.O_NONBLOCK)
}

func fcntl(f *os.File) (int, error) {
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(flags), nil
}

// TestCPUProfileNeedsTheTag: a plain build refuses cpu_profile rather
// than ignoring it.
func TestCPUProfileNeedsTheTag(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "las.json")
	require.NoError(t, os.WriteFile(conf, []byte(`{"cpu_profile":"`+filepath.Join(t.TempDir(), "cpu")+`"}`), 0o600))
	_, err := startCPUProfile("x")
	if err == nil {
		t.Skip("built with examplelas_pprof")
	}
	assert.Equal(t, 2, Main([]string{conf}))
}
