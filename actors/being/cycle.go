package being

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/prompt"
	"github.com/wisent/singularity/internal/store/budget"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
)

// Report statuses of a cycle (docs/cycle.md#the-cycle-report).
const (
	ReportCompleted       = "completed"
	ReportToolRoundLimit  = "tool_round_limit"
	ReportBudgetExhausted = "budget_exhausted"
)

// cycleRun is the cycle in progress: where it stands, and what its
// next step needs from the one before (a reply, a durable write).
type cycleRun struct {
	round   int
	actions []string
	// system is the stable layout's system message, frozen for the
	// cycle at its first round (docs/cycle.md#the-stable-layout).
	system *chat.Message
	calls  []chat.ToolCall
	next   int
	// waiting is what the cycle waits for, for the debug endpoint and
	// the shutdown logic (abandonWork); held is what a write held for
	// storage would leave in flight if it were given up.
	waiting waitFor
	held    waitFor
	// reservation is the round's (docs/money.md#no-overdraft); ticket is
	// the spend limiter's admission of it (0 without limits); request is
	// the round's completion request, asked once it is admitted; wait is
	// the spend limiter's wait before it is asked again.
	reservation budget.Reservation
	// sent is the round's prompt, for the next round's tight bound;
	// promptBound the prompt tokens its reservation assumed.
	sent        sentPrompt
	promptBound int
	ticket      uint64
	request     messages.CompletionRequest
	wait        time.Duration
	// reply is the completion's assistant message, kept while its step
	// is written; err is the refusal a billed rejection ends the cycle
	// with.
	reply chat.Message
	err   error
	// tool is the call in progress (tools.go); elapsed, finish and model
	// go to the observer with the next step.
	tool    toolCall
	elapsed time.Duration
	finish  string
	model   string
}

// cycleEnd is a cycle that ended, while its checkpoint is written.
type cycleEnd struct {
	report messages.CycleReport
	err    error
}

// startCycle runs step 1 and 2 of docs/cycle.md#anatomy-of-a-cycle: the
// solvency gate, then the framing. A tick that arrives while a write is
// in flight (warnings, a checkpoint) starts the cycle when it lands.
func (b *Being) startCycle(ctx actor.Context) {
	if b.phase != phaseIdle || b.stop != nil {
		return
	}
	if b.engine.Busy() {
		b.next.deferred = true
		return
	}
	if !b.solvent() {
		b.endCycle(ctx, b.report(ReportBudgetExhausted, nil, nil), nil)
		return
	}
	b.cycle = &cycleRun{}
	b.phase = phaseCycling
	b.frame(ctx)
}

// solvent is the solvency gate: remaining above zero, and the last
// reservation affordable (docs/money.md#no-overdraft). The being's
// applied budget is the one copy of its money, so no ask is needed.
func (b *Being) solvent() bool { return b.st.Budget.Remaining.Sign() > 0 && !b.purse.exhausted }

// frame journals the next cycle's cycle_started with its framing message
// (and the stimulus on cycle 1) as one step, then starts the first round.
// The framing carries the inbox's messages, and the event their ids.
// Applying it advances the counter and appends the messages; a framing
// the model never answered (the last cycle failed first) is replaced.
func (b *Being) frame(ctx actor.Context) {
	cycle := b.st.Cycle + 1
	funds := b.st.Budget
	at := b.opts.now()
	events, tier, model := b.tierChange(at, cycle)
	text := prompt.Framing(cycle, funds.Remaining, funds.Earned, funds.NetProfit(), model, b.st.RecentActions)
	if t, ok := b.opts.Tiers.Get(tier); ok {
		text += prompt.TierNote(tier, t)
	}
	inbox, delivered := b.inboxForFraming()
	text = prompt.WithMessages(text, inbox)
	if b.stable() {
		text = prompt.StableFraming(text, b.newMemories())
	}
	msgs := []chat.Message{{Role: chat.RoleUser, Content: text}}
	if cycle == 1 && b.opts.Stimulus != "" {
		msgs = append(msgs, chat.Message{Role: chat.RoleUser, Content: prompt.Stimulus(b.opts.Stimulus)})
	}
	started := state.CycleStarted(at, cycle, msgs...)
	started.Delivered = delivered
	b.commit(ctx, append(events, started), nextRound)
}

// inboxForFraming is the inbox as the framing carries it
// (docs/family.md#messages): each message's text through the output
// boundary's secret screening, and the ids the cycle_started event
// lists, which take the messages out of the inbox once durable.
func (b *Being) inboxForFraming() ([]state.InMessage, []string) {
	if len(b.st.Inbox) == 0 {
		return nil, nil
	}
	inbox := make([]state.InMessage, len(b.st.Inbox))
	ids := make([]string, len(b.st.Inbox))
	for i, m := range b.st.Inbox {
		m.Text = b.opts.Secrets.RedactString(m.Text)
		inbox[i], ids[i] = m, m.ID
	}
	return inbox, ids
}

// startRound runs one model round, or ends the cycle at the round limit.
func (b *Being) startRound(ctx actor.Context) {
	if b.phase != phaseCycling {
		// Draining: this is the round boundary a stop waits for.
		b.abandonCycle(ctx)
		return
	}
	if b.asleep() {
		// A call of the last round slept: the cycle ends here
		// (docs/family.md#sleep).
		b.endCycle(ctx, b.report(ReportCompleted, nil, b.cycle.actions), nil)
		return
	}
	if b.cycle.round >= b.maxToolRounds() {
		b.warn("maximum tool rounds reached")
		b.endCycle(ctx, b.report(ReportToolRoundLimit, nil, b.cycle.actions), nil)
		return
	}
	if !b.solvent() {
		b.endCycle(ctx, b.report(ReportBudgetExhausted, nil, b.cycle.actions), nil)
		return
	}
	system, window := b.cognition()
	reservation, ok := b.reserve(system, window)
	if !ok {
		// Not even the smallest completion is affordable: the being is
		// exhausted with remaining ≥ 0 (docs/money.md#no-overdraft).
		b.purse.exhausted = true
		floor := b.reserveFloor(system, window)
		b.purse.unpaid = &floor
		b.endCycle(ctx, b.report(ReportBudgetExhausted, nil, b.cycle.actions), nil)
		return
	}
	if reservation.Lowered {
		b.log.Info("max_tokens lowered to what the balance pays for", "max_tokens", reservation.MaxTokens, "remaining", b.st.Budget.Remaining.String())
	}
	b.cycle.round++
	b.purse.lastReservation = reservation.Bound
	b.cycle.reservation = reservation
	b.cycle.request = messages.CompletionRequest{
		AgentID:      b.st.Identity.AgentID,
		BeingID:      b.me.ID,
		Model:        b.st.Mind.CurrentModel,
		Messages:     []chat.Message{system},
		Encoded:      window,
		Tools:        b.catalog.tools,
		ToolsEncoded: b.catalog.encoded,
		MaxTokens:    reservation.MaxTokens,
	}
	if !b.limited() {
		b.requestCompletion(ctx)
		return
	}
	b.admit(ctx)
}

// requestCompletion asks the gateway for the round's completion.
func (b *Being) requestCompletion(ctx actor.Context) {
	b.cycle.waiting = waitModel
	req := b.cycle.request
	b.cycle.request = messages.CompletionRequest{} // the window is not held twice
	b.request(ctx, b.opts.Gateway, req, b.modelTimeout(), replyCompletion)
}

func (b *Being) modelTimeout() time.Duration {
	if b.opts.ModelTimeout > 0 {
		return b.opts.ModelTimeout
	}
	return 130 * time.Second
}

// completionAnswered takes the gateway's answer: it is priced
// (budget.ComputeDebit) and journaled with its debit as one step
// (docs/money.md#debit); only once that is durable does the debit take
// effect, the assistant message join the conversation and any tool run.
func (b *Being) completionAnswered(ctx actor.Context, r reply) {
	resp, ok := r.res.(messages.CompletionResponse)
	if r.err != nil || !ok {
		resp = messages.CompletionResponse{Err: fault.Upstream(fault.ClassBrama, fault.Indeterminate, "completion: no answer from the gateway: %w", replyError(r.err, "unexpected reply"))}
	}
	b.handleCompletion(ctx, resp)
}

// handleCompletion prices a completion and journals it, or ends the
// cycle on an unbilled refusal.
func (b *Being) handleCompletion(ctx actor.Context, resp messages.CompletionResponse) {
	b.cycle.waiting = waitNothing
	if resp.Err != nil && !resp.Billed {
		b.settle(ctx, b.cycle.ticket, money.Zero)
		switched, err := b.modelNotServed(resp.Err)
		b.endCycle(ctx, b.report(ReportCompleted, nil, b.cycle.actions), err, switched...)
		return
	}
	if resp.Unpriced {
		b.warn(UnpricedModelBilled)
	}
	b.noteBilledPrices(resp.Prices)
	if resp.PromptReserved {
		resp.Usage = b.reservedPrompt(resp.Usage)
	}
	debit := b.price(resp)
	b.notePrompt(resp)
	if resp.Err != nil {
		b.commitBilledRejection(ctx, resp, debit)
		return
	}
	b.commitCompletion(ctx, resp, debit)
}

// price is what a completion costs (docs/money.md#debit): its usage and
// call time at the configured prices, or at its model's token prices when
// the response carries them (docs/brama.md#per-model-prices).
func (b *Being) price(resp messages.CompletionResponse) budget.Debit {
	p := b.opts.Pricing
	if resp.Prices != nil {
		p = p.WithTokens(*resp.Prices)
	}
	return budget.ComputeDebit(p, resp.Usage, resp.Elapsed)
}

// commitBilledRejection debits a completion refused as malformed that
// carried a well-formed usage block (docs/brama.md#billed-rejections):
// model_completed without a message and cost_debited, durable before the
// error is handled as any other refusal.
func (b *Being) commitBilledRejection(ctx actor.Context, resp messages.CompletionResponse, debit budget.Debit) {
	at := b.opts.now()
	if debit.Amount.Cmp(b.cycle.reservation.Bound) > 0 {
		b.warn(ExceededReservation)
	}
	b.settle(ctx, b.cycle.ticket, debit.Amount)
	step := []state.Event{
		state.ModelCompleted(at, b.st.Cycle, resp.Usage),
		state.Debited(at, b.st.Cycle, debit.API, debit.Instance, debit.Tokens),
	}
	b.cycle.err = resp.Err
	b.cycle.model = b.billedModel(resp)
	b.commit(ctx, step, nextRejected)
}

// rejectionDurable ends the cycle on the billed rejection's error, its
// cost applied.
func (b *Being) rejectionDurable(ctx actor.Context) {
	b.endCycle(ctx, b.report(ReportCompleted, nil, b.cycle.actions), b.cycle.err)
}

// commitCompletion is the completion's step: model_completed with the
// assistant message, cost_debited with the priced split, and the
// truncation and lenient-validation warnings when there are any.
func (b *Being) commitCompletion(ctx actor.Context, resp messages.CompletionResponse, debit budget.Debit) {
	at := b.opts.now()
	if resp.Truncated {
		b.warn("completion truncated at max tokens")
	}
	if debit.Amount.Cmp(b.cycle.reservation.Bound) > 0 {
		b.warn(ExceededReservation)
	}
	b.settle(ctx, b.cycle.ticket, debit.Amount)
	for _, w := range resp.Warnings {
		b.warn(w)
	}
	msg := resp.Message
	msg.Role = chat.RoleAssistant
	step := []state.Event{
		state.ModelCompleted(at, b.st.Cycle, resp.Usage, msg),
		state.Debited(at, b.st.Cycle, debit.API, debit.Instance, debit.Tokens),
	}
	b.cycle.reply = msg
	b.cycle.elapsed, b.cycle.finish = resp.Elapsed, resp.FinishReason
	b.cycle.model = b.billedModel(resp)
	b.commit(ctx, step, nextTools)
}

// billedModel is the model a completion is counted under in the metrics
// (observe.Step.Model): the one its response names, else the one asked
// for.
func (b *Being) billedModel(resp messages.CompletionResponse) string {
	if resp.Model != "" {
		return resp.Model
	}
	return b.st.Mind.CurrentModel
}

// completionDurable runs the tools of a completion whose step (its cost
// included) is applied, or ends the cycle on its content.
func (b *Being) completionDurable(ctx actor.Context) {
	b.answered()
	msg := b.cycle.reply
	b.cycle.reply = chat.Message{}
	if len(msg.ToolCalls) == 0 {
		content := msg.Content
		b.endCycle(ctx, b.report(ReportCompleted, &content, b.cycle.actions), nil)
		return
	}
	b.cycle.calls = msg.ToolCalls
	b.cycle.next = 0
	b.nextTool(ctx)
}

// report builds the cycle report from the current budget.
func (b *Being) report(status string, final *string, actions []string) messages.CycleReport {
	funds := b.st.Budget
	if actions == nil {
		actions = []string{}
	}
	return messages.CycleReport{
		Cycle:        b.st.Cycle,
		Status:       status,
		FinalContent: final,
		Balance:      funds.Remaining,
		Earned:       funds.Earned,
		NetProfit:    funds.NetProfit(),
		TotalTokens:  funds.TotalTokens,
		Actions:      append([]string(nil), actions...),
	}
}

// endCycle closes the cycle, writes the cycle-end checkpoint and then
// decides what comes next (afterCycle). In run a cycle error is
// journaled as a warning (with the checkpoint's step), and the next
// cycle need not wait for state.json: the cycle's steps are durable in
// the journal already. events, when there are any, are journaled with
// that step.
func (b *Being) endCycle(ctx actor.Context, report messages.CycleReport, err error, events ...state.Event) {
	b.closeCycle()
	report.Err = err
	if err != nil && b.opts.Mode != Once && !permanentBrama(err) {
		b.warn(err.Error())
	}
	b.next.ended = &cycleEnd{report: report, err: err}
	n := nextCycleEnd | thenCheckpoint
	if b.opts.Mode == Run {
		n |= inBackground
	}
	b.commit(ctx, events, n)
}

// afterCycle decides what follows a cycle whose end is durable
// (docs/cycle.md#run-loop-errors-and-shutdown): once reports to the
// parent; run sleeps and continues (longer after failing cycles), stops
// exhausted, or fails on a permanent Brama error.
func (b *Being) afterCycle(ctx actor.Context) {
	report, err := b.next.ended.report, b.next.ended.err
	b.next.ended = nil
	b.observeCycle(report, err)
	b.sendParent(ctx, report)
	if b.opts.Mode == Once {
		if permanentBrama(err) {
			// once ends with the error (exit 3) and the being is failed.
			b.beginStop()
			b.stop.err = err
		}
		// A stop asked while once's cycle was still running waited for
		// the cycle to end: carry on with it now.
		if b.stop != nil {
			b.continueShutdown(ctx)
		}
		return
	}
	switch {
	case report.Status == ReportBudgetExhausted:
		b.stopWith(ctx, nil)
		return
	case permanentBrama(err):
		b.log.Error("permanent Brama failure", "err", err)
		b.stopWith(ctx, err)
		return
	case err != nil:
		b.next.failed++
		b.next.gateway = transientBrama(err)
	default:
		b.next.failed = 0
	}
	if b.stop != nil {
		b.continueShutdown(ctx)
		return
	}
	if b.opts.MaxCycles > 0 && b.st.Cycle >= b.opts.MaxCycles {
		b.log.Info("cycle limit reached; idle until stopped", "cycles", b.st.Cycle)
		return
	}
	b.scheduleTick(ctx)
}

// observeCycle tells the observer how the cycle ended: its report
// status, or "failed" when it ended on an error.
func (b *Being) observeCycle(report messages.CycleReport, err error) {
	if b.opts.Observer == nil {
		return
	}
	status := report.Status
	if err != nil {
		status = "failed"
	}
	b.opts.Observer.CycleEnded(b.me, report.Cycle, status)
}

// Bounds of the wait after failing cycles (docs/cycle.md#failing-cycles):
// at most 5 min, or 30 s when the last failure was the gateway's
// transient one, so that a being resumes within 30 s of its provider's
// return.
const (
	failedCycleFloor = time.Second
	failedCycleMax   = 5 * time.Minute
	gatewayCycleMax  = 30 * time.Second
)

// nextWait is the sleep before the next cycle: the interval, or after n
// failing cycles in a row the interval (at least 1 s) doubled n−1 times,
// at most 5 min (30 s when gateway says the last failure was a transient
// gateway error).
func nextWait(interval time.Duration, failed int, gateway bool) time.Duration {
	if failed == 0 {
		return interval
	}
	ceiling := failedCycleMax
	if gateway {
		ceiling = gatewayCycleMax
	}
	wait := max(interval, failedCycleFloor)
	for range failed - 1 {
		if wait >= ceiling {
			break
		}
		wait *= 2
	}
	// Never shorter than the interval itself, however long that is.
	return min(wait, max(ceiling, interval))
}

// scheduleTick waits, then starts the next cycle: the interval (longer
// after failing cycles), or, when the cycle slept, until its sleep ends
// (sleep.go). A stop request cancels the wait.
func (b *Being) scheduleTick(ctx actor.Context) {
	wait, asleep := b.sleepWait()
	if !asleep {
		wait = nextWait(b.cycleInterval(), b.next.failed, b.next.gateway)
	}
	b.tickAfter(ctx, wait)
}

// abandonCycle ends a cycle cut short by a stop request at a round
// boundary; everything done so far is already durable.
func (b *Being) abandonCycle(ctx actor.Context) {
	report := b.report(ReportCompleted, nil, b.cycle.actions)
	b.closeCycle()
	if b.opts.Mode == Once {
		b.sendParent(ctx, report)
	}
	b.continueShutdown(ctx)
}

// closeCycle forgets the cycle that ended: the being is idle again, or
// goes on with the shutdown asked meanwhile.
func (b *Being) closeCycle() {
	b.cycle = nil
	b.purse.throttled = false
	b.phase = phaseIdle
}

// permanentBrama reports a permanent Brama failure, which ends a being
// with status failed (docs/cycle.md#run-loop-errors-and-shutdown).
func permanentBrama(err error) bool {
	return err != nil && fault.ClassOf(err) == fault.ClassBrama && fault.KindOf(err) == fault.Permanent
}

// transientBrama reports whether err is a gateway failure that does not
// end the being (a 429, a 5xx, a refused connection, a refused request).
func transientBrama(err error) bool {
	return err != nil && fault.ClassOf(err) == fault.ClassBrama && fault.KindOf(err) != fault.Permanent
}
