package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

func TestDemoEvents(t *testing.T) {
	var out bytes.Buffer
	d := newDemoEvents(&out, testkit.USD("1"))
	d.now = func() time.Time { return time.Date(2026, 3, 1, 9, 8, 7, 0, time.UTC) }
	ada := observe.Being{Name: "Ada", ID: "ada"}
	at := state.Now()
	wrote := state.ToolFinished(at, 1, builtin.FileWrite, "success")
	wrote.Chat = &chat.Message{Role: chat.RoleTool, Content: `{"chat_id":null,"content":{"path":"notes/a.md","bytes":12},"error_code":null,"message_id":null,"status":"success"}`}
	failed := state.ToolFinished(at, 1, builtin.FileWrite, "failed")
	for _, events := range [][]state.Event{
		{state.ToolFinished(at, 1, builtin.SpawnChild, "success"), state.ChildAdded(state.Child{ID: "c1", Name: "Bo"})},
		{{Type: observe.EventEndowmentGranted, At: at, Cycle: 2, Amount: testkit.USD("0.255")}},
		{state.ToolFinished(at, 2, builtin.SpawnChild, "success"), state.ChildAdded(state.Child{ID: "c2", Name: "Cy"})},
		{state.ToolFinished(at, 2, "finance__sell", "success"), state.RevenueCredited(at, 2, testkit.USD("0.05"), "finance__sell")},
		{wrote},
		{failed},
		{state.ToolFinished(at, 2, builtin.SelfSwitchModel, "success"), state.ModelSwitched("sim-large")},
		{state.ModelCompleted(at, 2, chat.Usage{}), state.Debited(at, 2, testkit.USD("0.001"), money.Zero, 1)},
	} {
		d.Step(observe.Step{Being: ada, Events: events})
	}
	assert.Equal(t, `  09:08:07 Ada spawned child Bo with a starting balance of 1.00 USD
  09:08:07 Ada spawned child Cy with an endowment of 0.26 USD
  09:08:07 Ada earned 0.05 USD (finance__sell)
  09:08:07 Ada wrote workspace file notes/a.md (12 bytes)
  09:08:07 Ada switched model to sim-large
`, out.String())
}
