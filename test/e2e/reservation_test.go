package e2e_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// TestTightReservationNeverOverdraws lives a stable-layout being on a
// bearer gateway that reports real token counts (a prompt token per 4
// bytes of the request, the completion within max_tokens) from 0.2 USD
// to exhaustion at 3 and 15 USD per million, with tool rounds within
// cycles and, its fourth answer, no usage block at all (charged the
// reservation): no completion's debit exceeds its reservation (the
// being would journal `completion cost exceeded its reservation`), the
// balance never goes below zero, and the reserve it ends unable to pay
// is tight, within a quarter of what one more completion of
// SINGULARITY_MIN_COMPLETION_TOKENS would really cost
// (docs/money.md#no-overdraft).
func TestTightReservationNeverOverdraws(t *testing.T) {
	t.Parallel()
	w := newGatewayWorld(t, "bearer", "gpt-x")
	w.env["SINGULARITY_STARTING_BALANCE_USD"] = "0.2"
	w.env["BRAMA_INPUT_PRICE_USD_PER_MILLION"] = "3"
	w.env["BRAMA_OUTPUT_PRICE_USD_PER_MILLION"] = "15"
	w.env["SINGULARITY_INSTANCE_USD_PER_HOUR"] = "0"
	w.env["SINGULARITY_PROMPT_LAYOUT"] = "stable"
	w.env["SINGULARITY_CYCLE_INTERVAL_SECS"] = "0"
	w.env["SINGULARITY_LOG_LEVEL"] = "warn"
	var mu sync.Mutex
	n := 0
	w.brama.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		usage := bramatest.Usage(uint64(len(r.Body)+3)/4, min(60, uint64(r.Completion.MaxTokens)))
		switch {
		case k == 4:
			return bramatest.ModelReply("gpt-x", bramatest.NoUsageReply("no count this time"))
		case k%3 == 0:
			return bramatest.ModelReply("gpt-x", bramatest.ToolCallsReply(usage,
				bramatest.Call(fmt.Sprintf("c%d", k), "singularity_memory_remember", `{"kind":"note","text":"round `+strconv.Itoa(k)+`"}`)))
		}
		return bramatest.ModelReply("gpt-x", bramatest.TextReply("resting", usage))
	})
	r := w.start("run").wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)

	st := w.loadState()
	require.Equal(t, state.StatusExhausted, st.Status)
	events := w.journal()
	requireNeverNegative(t, testkit.USD("0.2"), events)
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	assert.NotContains(t, warnings(events), "completion cost exceeded its reservation")
	assert.Contains(t, warnings(events), "completion reported no usage; charged its reservation")
	var lastPrompt uint64
	for _, e := range events {
		if e.Type == state.EventModelCompleted {
			lastPrompt = e.Usage.PromptTokens
		}
	}
	_, reserveText := exhaustedReason(t, st.StatusReason)
	reserve := testkit.USD(reserveText)
	cost := testkit.USD(strconv.FormatUint(lastPrompt*3+256*15, 10)).Mul(testkit.USD("0.000001"))
	t.Logf("%d cycles, %d completions; stranded %s of 0.2 USD; the reserve it could not pay %s, a real completion %s",
		st.Cycle, len(w.brama.Completions()), st.Budget.Remaining, reserve, cost)
	assert.LessOrEqual(t, reserve.Cmp(cost.Mul(testkit.USD("1.25"))), 0, "the reserve is tight")
}
