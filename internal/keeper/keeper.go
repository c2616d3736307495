// Package keeper is the Las keeper (docs/las.md#leftovers): the small
// process between the runtime and one Las that makes sure no descendant
// of that Las outlives the runtime, however the runtime dies. It imports
// nothing but the standard library, so that the dedicated keeper binary
// (cmd/singularity-keeper) starts in about a millisecond of CPU; the
// runtime's own binary runs it too, as its las-keeper command, where
// that binary is not installed.
package keeper

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Command is the first argument of a keeper's command line: `<keeper>
// las-keeper <runtime pid> <command> <args…>`, whichever binary runs it.
const Command = "las-keeper"

// DeathSignal is the keeper's parent-death signal (the
// Config.DeathSignal of a server started under a keeper): catchable, so
// the keeper can end its whole tree before it goes.
const DeathSignal = syscall.SIGUSR1

// Run is the Las keeper, given the arguments after Command: `<runtime
// pid> <command> <args…>`. It sits between the runtime and one Las
// process so that no descendant of that Las outlives the runtime,
// however the runtime dies (docs/las.md#leftovers):
//
//   - it is a child subreaper, so whatever the Las starts, setsid or not,
//     stays in its tree;
//   - it runs the Las as its child with the same stdin, stdout and stderr
//     (no copying), in its process group, with SIGKILL as the Las's
//     parent-death signal;
//   - when the runtime dies (its own parent-death signal, SIGUSR1, or its
//     parent is already gone) or when the Las exits, it SIGKILLs every
//     process left in its tree and exits with the Las's status.
//
// When its file descriptor 3 is a pipe (Config.Keeper), the keeper
// reports on it whether the Las started: it closes it once the Las runs,
// or writes why the Las could not be executed and exits with
// CannotStart, so that its parent tells a command that cannot run
// from a Las that exited.
//
// SIGTERM and SIGINT, which the shutdown ladder sends to the whole group,
// reach the Las directly; the keeper waits for it to act on them.
func Run(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "las-keeper: usage: las-keeper <runtime pid> <command> [args...]")
		return 2
	}
	runtime, err := strconv.Atoi(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "las-keeper: bad runtime pid")
		return 2
	}
	died := make(chan os.Signal, 1)
	signal.Notify(died, DeathSignal)
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if os.Getppid() != runtime {
		return 137 // the runtime died before the keeper was ready
	}
	report := startReport()
	_ = Subreaper()
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// The Las gets the signals the keeper ignores at their default.
	signal.Reset(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	startErr := cmd.Start()
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if startErr != nil {
		if report == nil {
			fmt.Fprintln(os.Stderr, "las-keeper:", startErr)
		} else {
			_, _ = io.WriteString(report, startErr.Error())
			_ = report.Close()
		}
		return CannotStart
	}
	if report != nil {
		_ = report.Close() // the Las runs
	}
	// Only the Las holds our stdin and stdout now: its end is theirs.
	_ = os.Stdin.Close()
	_ = os.Stdout.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	code := 137
	select {
	case err := <-exited:
		code = exitCode(cmd, err)
	case <-died:
	}
	endTree()
	return code
}

// CannotStart is the keeper's exit status when it cannot execute the
// Las (the shell's "command not found").
const CannotStart = 127

// ReportFD is the keeper's start-report pipe (mcpstdio's Config.Keeper):
// the keeper's parent passes it as the first of its extra files.
const ReportFD = 3

// startReport returns the start-report pipe, close-on-exec so that the
// Las does not hold it, or nil when file descriptor 3 is not a pipe.
func startReport() *os.File {
	var st syscall.Stat_t
	if err := syscall.Fstat(ReportFD, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return nil
	}
	syscall.CloseOnExec(ReportFD)
	return os.NewFile(ReportFD, "las-keeper start report")
}

// exitCode mirrors the Las's exit: its status, or 128+signal.
func exitCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return 1
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if err != nil && cmd.ProcessState.ExitCode() < 0 {
		return 1
	}
	return cmd.ProcessState.ExitCode()
}

// endTree SIGKILLs and reaps every child of the keeper (its subreaper
// role makes that the whole tree left behind) until none is left.
//
// The children are read from the kernel's lists of each of the
// keeper's threads (/proc/self/task/<tid>/children), not by reading
// every process in /proc: when a runtime with hundreds of Las dies, all
// their keepers end their trees at once, and a whole scan each took
// seconds of CPU from the member taking the family over. The lists can
// miss a child that is being forked; the keeper is done only when the
// kernel says it has no child at all (wait4 is ECHILD), and a round
// whose lists are empty while a child remains scans /proc instead.
func endTree() {
	self := os.Getpid()
	for range 100 { // a tree that keeps forking while it is killed ends too
		found, ok := listedChildren()
		if !ok || len(found) == 0 {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			switch {
			case errors.Is(err, syscall.ECHILD):
				return // no child left
			case err == nil && pid > 0:
				continue // one had exited: reaped, look again
			}
			found = scannedChildren(self)
		}
		for _, pid := range found {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range found {
			_, _ = syscall.Wait4(pid, nil, 0, nil) // ECHILD: the Las's own waiter had it
		}
	}
}

// listedChildren reads the keeper's children from the lists of its
// threads; ok is false where the kernel keeps none.
func listedChildren() (pids []int, ok bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, false
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && len(pids) == 0 {
				return nil, false // no CONFIG_PROC_CHILDREN
			}
			continue // a thread that ended
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids, true
}

// scannedChildren finds the children of self by reading every process
// in /proc.
func scannedChildren(self int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if ppid, _, ok := ProcParent(pid); ok && ppid == self {
			found = append(found, pid)
		}
	}
	return found
}

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (Linux).
const prSetChildSubreaper = 36

// Subreaper makes this process the child subreaper of everything it
// starts: a descendant that outlives its parent is reparented here
// instead of to init. It returns prctl's error where prctl refuses.
func Subreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return errno
	}
	return nil
}

// ProcParent reads the parent pid and process group of pid from
// /proc/<pid>/stat.
func ProcParent(pid int) (ppid, pgid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name is in parentheses and may hold anything; the
	// fields after the last ')' are: state ppid pgrp …
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	return ppid, pgid, err1 == nil && err2 == nil
}

// Binary is the file name of the dedicated keeper (cmd/singularity-keeper).
const Binary = "singularity-keeper"

// Path is the keeper the runtime whose executable is self starts each
// Las under: the dedicated keeper when it is installed beside self (an
// executable regular file named Binary in the same directory), else
// self, whose las-keeper command runs the same keeper. The runtime's
// binary holds the whole runtime, and starting it costs several times
// the CPU of the dedicated keeper, once per Las: at a family's takeover
// hundreds of Las start at once (docs/cluster.md#measured).
func Path(self string) string {
	beside := filepath.Join(filepath.Dir(self), Binary)
	info, err := os.Stat(beside)
	if err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
		return beside
	}
	return self
}
