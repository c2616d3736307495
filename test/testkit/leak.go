package testkit

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// LeakOptions are the goroutines a leak check may ignore: protoactor's
// throttles (the dead-letter one and those made with a logger) reset
// themselves on a timer goroutine that outlives the actor system for up
// to a throttle period, and the goroutines the mailbox pool of beings
// and Las actors keeps parked between runs (a bounded few per process).
// They are ignored wherever they are in a stack.
func LeakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/wisent/singularity/internal/mailbox.(*Pool).work"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewThrottleWithLogger.func1.1"),
	}
}

// VerifyMain runs a test binary's tests; when they pass, it fails the run
// if any goroutine is left but those of LeakOptions. Either way it
// removes the binaries the tests built. Call it as the whole body of
// TestMain.
func VerifyMain(m *testing.M) {
	opts := append(LeakOptions(), goleak.Cleanup(func(code int) {
		Cleanup()
		os.Exit(code)
	}))
	goleak.VerifyTestMain(m, opts...)
}
