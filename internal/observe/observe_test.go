package observe

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSurface(t *testing.T) {
	for tool, want := range map[string]string{
		"finance__finance_sell_report": "finance",
		"echo__echo":                   "echo",
		"__odd":                        "builtin",
		"most_send_message":            "most",
		"singularity_memory_remember":  "builtin",
		"":                             "builtin",
	} {
		assert.Equal(t, want, Surface(tool), tool)
	}
}

func TestLabel(t *testing.T) {
	assert.Equal(t, "Bo-1a2b3c4d", Being{Name: "Bo", ID: "1a2b3c4d-5e6f-7a8b"}.Label())
	assert.Equal(t, "Ada-ada", Being{Name: "Ada", ID: "ada"}.Label())
}

type counting struct{ steps, cycles, starts, restarts, writes int }

func (c *counting) Step(Step)                        { c.steps++ }
func (c *counting) CycleEnded(Being, uint64, string) { c.cycles++ }
func (c *counting) LasStarted(Being, string)         { c.starts++ }
func (c *counting) LasRestarted(Being, string)       { c.restarts++ }
func (c *counting) DurableWrite(time.Duration)       { c.writes++ }

func TestTee(t *testing.T) {
	assert.Nil(t, Tee())
	assert.Nil(t, Tee(nil, nil))
	one := &counting{}
	assert.Same(t, one, Tee(nil, one))
	a, b := &counting{}, &counting{}
	o := Tee(a, nil, b)
	o.Step(Step{})
	o.CycleEnded(Being{}, 1, "completed")
	o.LasStarted(Being{}, "las")
	o.LasRestarted(Being{}, "las")
	o.DurableWrite(time.Millisecond)
	for _, c := range []*counting{a, b} {
		assert.Equal(t, counting{1, 1, 1, 1, 1}, *c)
	}
}
