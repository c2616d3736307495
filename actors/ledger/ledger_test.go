package ledger

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyMain(m) }

const deadline = 5 * time.Second

var m = testkit.USD

func newSystem(t *testing.T) *actor.ActorSystem {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(system.Shutdown)
	return system
}

func describe(t *testing.T, system *actor.ActorSystem, pid *actor.PID) messages.Description {
	t.Helper()
	res, err := system.Root.RequestFuture(pid, messages.DescribeRequest{}, deadline).Result()
	require.NoError(t, err)
	d, ok := res.(messages.Description)
	require.True(t, ok, "reply %T", res)
	return d
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		name   string
		budget state.Budget
		status string
	}{
		{"solvent", state.Budget{Starting: m("1"), Remaining: m("0.000000000001")}, StatusSolvent},
		{"exhausted at zero", state.Budget{Starting: m("1"), Remaining: m("0")}, StatusExhausted},
		{"exhausted below zero", state.Budget{Starting: m("1"), Remaining: m("-0.5")}, StatusExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.status, Describe("Ada", tt.budget).Status)
		})
	}
	b := state.Budget{Starting: m("0.01"), Remaining: m("0.01")}.Debit(m("0.0051"), m("0.000034277778"), 1300).Credit(m("0.5")).Grant(m("0.1"))
	assert.Equal(t, messages.Description{Kind: "ledger", Name: "Ada", Status: StatusSolvent, Figures: map[string]any{
		"starting": "0.01", "remaining": "0.404865722222", "spent": "0.005134277778", "earned": "0.5", "granted": "0.1",
	}}, Describe("Ada", b))
}

// TestLedgerAnswersFromItsBeing: the ledger keeps no figures of its own;
// its being, which owns the money, answers whoever asked the ledger.
func TestLedgerAnswersFromItsBeing(t *testing.T) {
	system := newSystem(t)
	budget := state.Budget{Starting: m("2"), Remaining: m("1.5"), APISpent: m("0.5")}
	spawned := make(chan *actor.PID, 1)
	being := actor.PropsFromFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case *actor.Started:
			pid, err := ctx.SpawnNamed(Props("Ada"), "ledger")
			if err != nil {
				panic(err)
			}
			spawned <- pid
		case messages.LedgerFiguresRequest:
			ctx.Respond(Describe("Ada", budget))
		}
	})
	parent, err := system.Root.SpawnNamed(being, "being-ada")
	require.NoError(t, err)
	t.Cleanup(func() { _ = system.Root.StopFuture(parent).Wait() })
	pid := <-spawned

	assert.Equal(t, Describe("Ada", budget), describe(t, system, pid))
}

func TestLedgerWithoutBeing(t *testing.T) {
	system := newSystem(t)
	pid, err := system.Root.SpawnNamed(Props("Ada"), "ledger")
	require.NoError(t, err)
	t.Cleanup(func() { _ = system.Root.StopFuture(pid).Wait() })
	assert.Equal(t, messages.Description{Kind: "ledger", Name: "Ada"}, describe(t, system, pid))
}
