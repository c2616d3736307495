package family_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/brama"
	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// start spawns a family whose root lives in dir on built-in tools, with
// a Brama that ends every cycle with a plain reply.
func start(t *testing.T, dir string) (*actor.ActorSystem, *actor.PID, <-chan any) {
	return startWith(t, dir, time.Second, func(*bramatest.Request) bramatest.Reply {
		return bramatest.TextReply("ok", bramatest.Usage(10, 1))
	})
}

// startWith is start with the root's shutdown grace and Brama's answers
// given.
func startWith(t *testing.T, dir string, grace time.Duration, answer func(*bramatest.Request) bramatest.Reply) (*actor.ActorSystem, *actor.PID, <-chan any) {
	t.Helper()
	workspace := t.TempDir()
	system := quietSystem(t)
	listener, events, stopListener := family.Listen(system)
	t.Cleanup(stopListener)
	pid, err := system.Root.SpawnNamed(family.Props(family.Options{
		Gateway: gateway(t, answer),
		Root: being.Options{
			StateDir: dir, Identity: testkit.Identity(), Mode: being.Run,
			Model: "test-model", StartingBalance: testkit.USD("1"), Workspace: workspace,
			MaxToolRounds: 2, ContextMessages: 20, CycleInterval: time.Hour, ShutdownGrace: grace,
		},
		Listener: listener,
	}), "family")
	require.NoError(t, err)
	return system, pid, events
}

// gateway is the family's gateway to a Brama that answers with answer.
func gateway(t *testing.T, answer func(*bramatest.Request) bramatest.Reply) brama.GatewayConfig {
	t.Helper()
	secret := []byte("family-unit-secret")
	srv := bramatest.Start(t, bramatest.Config{Secret: secret, Handler: answer})
	client, err := brama.NewClient(brama.ClientConfig{BaseURL: srv.URL, Secret: identity.NewSecret(secret), Timeout: 10 * time.Second})
	require.NoError(t, err)
	return brama.GatewayConfig{Client: client, ShutdownGrace: time.Second}
}

// quietSystem is an actor system that logs nothing, shut down when the
// test ends.
func quietSystem(t *testing.T) *actor.ActorSystem {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	t.Cleanup(system.Shutdown)
	return system
}

// boot creates the root's state in dir: a fresh being with the test
// identity and 1 USD.
func boot(t *testing.T, dir string) {
	t.Helper()
	id := testkit.Identity()
	_, _, _, err := state.Boot(dir, false, id, func() (*state.Being, error) {
		return being.NewState(id, testkit.USD("1"), "test-model", state.Now()), nil
	})
	require.NoError(t, err)
}

// stopped waits for the family's last word, skipping cycle reports.
func stopped(t *testing.T, events <-chan any) messages.FamilyStopped {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if s, ok := ev.(messages.FamilyStopped); ok {
				return s
			}
		case <-deadline:
			t.Fatal("no FamilyStopped")
		}
	}
}

func TestFamilyEnds(t *testing.T) {
	tests := []struct {
		name       string
		boot       bool // create the root's state first
		shutdown   bool
		wantStatus string
		wantErr    bool
		wantClass  fault.Class
	}{
		{name: "shutdown right after start", boot: true, shutdown: true, wantStatus: state.StatusStopped},
		{name: "root cannot load its state", boot: false, wantStatus: state.StatusFailed, wantErr: true, wantClass: fault.ClassState},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "root")
			if tt.boot {
				boot(t, dir)
			}
			system, pid, events := start(t, dir)
			if tt.shutdown {
				system.Root.Send(pid, messages.ShutdownFamily{})
			}
			got := stopped(t, events)
			assert.Equal(t, tt.wantStatus, got.Status)
			if tt.wantErr {
				require.Error(t, got.Err)
				assert.Equal(t, tt.wantClass, fault.ClassOf(got.Err), "%v", got.Err)
			} else {
				assert.NoError(t, got.Err)
			}
			if tt.boot {
				st, err := state.Load(dir)
				require.NoError(t, err)
				assert.Equal(t, state.StatusStopped, st.Status)
				events := testkit.Journal(t, dir)
				assert.Equal(t, state.EventStopped, events[len(events)-1].Type)
			} else {
				_, err := os.Stat(filepath.Join(dir, "state.json"))
				assert.ErrorIs(t, err, os.ErrNotExist, "a failed boot creates no being")
			}
		})
	}
}

func TestFamilyDescribesItself(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	boot(t, dir)
	system, pid, events := start(t, dir)
	res, err := system.Root.RequestFuture(pid, messages.DescribeRequest{}, 10*time.Second).Result()
	require.NoError(t, err)
	d, ok := res.(messages.Description)
	require.True(t, ok)
	assert.Equal(t, "family", d.Kind)
	assert.Equal(t, "family", d.Name)
	assert.Equal(t, "running", d.Status)
	require.Len(t, d.Children, 2)
	assert.Equal(t, "family/brama", d.Children[0].Id)
	assert.Equal(t, "family/"+family.RootName, d.Children[1].Id)
	system.Root.Send(pid, messages.ShutdownFamily{})
	assert.Equal(t, state.StatusStopped, stopped(t, events).Status)
}

// TestFamilySecondShutdownHurries: a model call in flight may finish
// within the shutdown grace; a second request (a second Ctrl-C) abandons
// it at once, and the being still saves and journals its stop.
func TestFamilySecondShutdownHurries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	boot(t, dir)
	asked := make(chan struct{}, 1)
	system, pid, events := startWith(t, dir, time.Hour, func(*bramatest.Request) bramatest.Reply {
		select {
		case asked <- struct{}{}:
		default:
		}
		return bramatest.Reply{Stall: true}
	})
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the root never asked Brama")
	}
	system.Root.Send(pid, messages.ShutdownFamily{})
	system.Root.Send(pid, messages.ShutdownFamily{Now: true})
	got := stopped(t, events)
	assert.Equal(t, state.StatusStopped, got.Status)

	st, err := state.Load(dir)
	require.NoError(t, err)
	assert.Equal(t, state.StatusStopped, st.Status)
	journal := testkit.Journal(t, dir)
	require.GreaterOrEqual(t, len(journal), 2)
	assert.Equal(t, state.EventStopped, journal[len(journal)-1].Type)
	warned := false
	for _, e := range journal {
		warned = warned || e.Type == state.EventWarning && e.Message == "abandoned model call in flight: shutdown without waiting"
	}
	assert.True(t, warned, "the abandoned call is journaled")
}
