package debug

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/debugtest"
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyMain(m) }

// testWait bounds every wait in these tests.
const testWait = 10 * time.Second

// quietSystem is an actor system whose own logger is discarded.
func quietSystem(t testing.TB) *actor.ActorSystem {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(system.Shutdown)
	return system
}

// spawnTree starts spec in a fresh system and stops it at cleanup.
func spawnTree(t testing.TB, spec debugtest.Spec) (*actor.ActorSystem, *actor.PID) {
	t.Helper()
	system := quietSystem(t)
	pid, err := debugtest.Spawn(system, spec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = system.Root.StopFuture(pid).Wait() })
	return system, pid
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	t.Cleanup(cancel)
	return ctx
}

// await receives from ch, failing the test after testWait.
func await[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testWait):
		t.Fatal("timed out waiting")
		var zero T
		return zero
	}
}
