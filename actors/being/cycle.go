package being

import (
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/prompt"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
)

// Report statuses of a cycle (docs/cycle.md#the-cycle-report).
const (
	ReportCompleted       = "completed"
	ReportToolRoundLimit  = "tool_round_limit"
	ReportBudgetExhausted = "budget_exhausted"
)

// cycleRun is the cycle in progress.
type cycleRun struct {
	round   int
	actions []string
	calls   []chat.ToolCall
	next    int
	// waiting is what the cycle waits for, for the debug endpoint and
	// the shutdown logic (abandonWork).
	waiting waitFor
}

// startCycle runs step 1 and 2 of docs/cycle.md#anatomy-of-a-cycle: the
// solvency gate, then the framing.
func (b *Being) startCycle(ctx actor.Context) {
	if b.phase != phaseIdle || b.stop != nil {
		return
	}
	if !b.solvent() {
		b.endCycle(ctx, b.report(ReportBudgetExhausted, nil, nil), nil)
		return
	}
	b.cycle = &cycleRun{}
	b.phase = phaseCycling
	if err := b.frame(); err != nil {
		b.endCycle(ctx, b.report(ReportCompleted, nil, nil), err)
		return
	}
	b.startRound(ctx)
}

// solvent is the solvency gate: remaining above zero. The being's copy
// of the budget is the ledger's last answer, so no ask is needed.
func (b *Being) solvent() bool { return b.st.Budget.Remaining.Sign() > 0 }

// frame increments the cycle, journals it, appends the framing message
// (and the stimulus on cycle 1) and saves.
func (b *Being) frame() error {
	b.st.Cycle++
	at := b.opts.now()
	if err := b.record(state.CycleStarted(at, b.st.Cycle)); err != nil {
		return err
	}
	budget := b.st.Budget
	text := prompt.Framing(b.st.Cycle, budget.Remaining, budget.Earned, budget.NetProfit(), b.st.Mind.CurrentModel, b.st.RecentActions)
	b.appendMessages(chat.Message{Role: chat.RoleUser, Content: text})
	if b.st.Cycle == 1 && b.opts.Stimulus != "" {
		b.appendMessages(chat.Message{Role: chat.RoleUser, Content: prompt.Stimulus(b.opts.Stimulus)})
	}
	return b.save()
}

// appendMessages adds to the conversation and applies the window: what leaves
// it goes to conversation.jsonl first
// (docs/cycle.md#the-conversation-window).
func (b *Being) appendMessages(msgs ...chat.Message) {
	b.st.Conversation = append(b.st.Conversation, msgs...)
	kept, archived := state.Window(b.st.Conversation, b.opts.ContextMessages)
	if len(archived) == 0 {
		return
	}
	if err := b.archive.Append(archived...); err != nil {
		// Keep everything rather than lose messages; the next append
		// tries again.
		b.log.Error("archive append failed", "err", err)
		return
	}
	b.st.Conversation = append([]chat.Message(nil), kept...)
}

// startRound runs one model round, or ends the cycle at the round limit.
func (b *Being) startRound(ctx actor.Context) {
	if b.phase != phaseCycling {
		// Draining: this is the round boundary a stop waits for.
		b.abandonCycle(ctx)
		return
	}
	if b.cycle.round >= b.opts.MaxToolRounds {
		b.warn("maximum tool rounds reached")
		b.endCycle(ctx, b.report(ReportToolRoundLimit, nil, b.cycle.actions), nil)
		return
	}
	if !b.solvent() {
		err := b.save()
		b.endCycle(ctx, b.report(ReportBudgetExhausted, nil, b.cycle.actions), err)
		return
	}
	b.cycle.round++
	req := messages.CompletionRequest{
		AgentID:  b.st.Identity.AgentID,
		Model:    b.st.Mind.CurrentModel,
		Messages: prompt.Cognition(&b.st.Mind, b.st.Conversation),
		Tools:    b.catalog.tools,
	}
	b.cycle.waiting = waitModel
	b.ask(ctx, b.opts.Gateway, req, b.modelTimeout(), func(res any, err error) {
		resp, ok := res.(messages.CompletionResponse)
		if err != nil || !ok {
			resp = messages.CompletionResponse{Err: supervision.Upstream(supervision.ClassBrama, supervision.Indeterminate, "completion: no answer from the gateway: %w", replyError(err, "unexpected reply"))}
		}
		b.handleCompletion(ctx, resp)
	})
}

func (b *Being) modelTimeout() time.Duration {
	if b.opts.ModelTimeout > 0 {
		return b.opts.ModelTimeout
	}
	return 130 * time.Second
}

// handleCompletion debits the completion, makes the cost durable before
// any tool runs, and continues with the tool calls or ends the cycle.
func (b *Being) handleCompletion(ctx actor.Context, resp messages.CompletionResponse) {
	b.cycle.waiting = waitNothing
	if resp.Err != nil {
		b.endCycle(ctx, b.report(ReportCompleted, nil, b.cycle.actions), resp.Err)
		return
	}
	b.cycle.waiting = waitLedger
	b.ask(ctx, b.ledger, messages.DebitRequest{Usage: resp.Usage, Elapsed: resp.Elapsed}, askTimeout, func(res any, err error) {
		b.cycle.waiting = waitNothing
		debit, ok := res.(messages.DebitResponse)
		if err == nil && !ok {
			err = errors.New("unexpected ledger reply")
		}
		if err != nil {
			b.endCycle(ctx, b.report(ReportCompleted, nil, b.cycle.actions), supervision.Errorf(supervision.ClassState, "debit: %w", err))
			return
		}
		if err := b.recordDebit(resp, debit); err != nil {
			b.endCycle(ctx, b.report(ReportCompleted, nil, b.cycle.actions), err)
			return
		}
		if len(resp.Message.ToolCalls) == 0 {
			content := resp.Message.Content
			b.endCycle(ctx, b.report(ReportCompleted, &content, b.cycle.actions), nil)
			return
		}
		b.cycle.calls = resp.Message.ToolCalls
		b.cycle.next = 0
		b.nextTool(ctx)
	})
}

// recordDebit journals model_completed and cost_debited, appends the
// assistant message and saves: a crash after this loses no recorded cost.
func (b *Being) recordDebit(resp messages.CompletionResponse, debit messages.DebitResponse) error {
	at := b.opts.now()
	b.st.Budget = state.Budget(debit.Budget)
	if err := b.record(state.ModelCompleted(at, b.st.Cycle, resp.Usage)); err != nil {
		return err
	}
	if err := b.record(state.CostDebited(at, b.st.Cycle, debit.Amount)); err != nil {
		return err
	}
	if resp.Truncated {
		b.warn("completion truncated at max tokens")
	}
	msg := resp.Message
	msg.Role = chat.RoleAssistant
	b.appendMessages(msg)
	return b.save()
}

// report builds the cycle report from the current budget.
func (b *Being) report(status string, final *string, actions []string) messages.CycleReport {
	budget := b.st.Budget
	if actions == nil {
		actions = []string{}
	}
	return messages.CycleReport{
		Cycle:        b.st.Cycle,
		Status:       status,
		FinalContent: final,
		Balance:      budget.Remaining,
		Earned:       budget.Earned,
		NetProfit:    budget.NetProfit(),
		TotalTokens:  budget.TotalTokens,
		Actions:      append([]string(nil), actions...),
	}
}

// endCycle closes the cycle and decides what comes next
// (docs/cycle.md#run-loop-errors-and-shutdown): once reports to the parent;
// run sleeps and continues, stops exhausted, or fails on a permanent Brama
// error.
func (b *Being) endCycle(ctx actor.Context, report messages.CycleReport, err error) {
	b.closeCycle()
	report.Err = err
	if report.Status == ReportBudgetExhausted {
		b.st.Status = state.StatusExhausted
		if saveErr := b.save(); saveErr != nil && err == nil {
			report.Err = saveErr
		}
	}
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
		b.warn(err.Error())
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

// scheduleTick sleeps the cycle interval, then starts the next cycle; a
// stop request cancels the sleep.
func (b *Being) scheduleTick(ctx actor.Context) {
	self, system, epoch := ctx.Self(), ctx.ActorSystem(), b.epoch
	if b.opts.CycleInterval <= 0 {
		ctx.Send(self, tick{epoch})
		return
	}
	b.timer = time.AfterFunc(b.opts.CycleInterval, func() { system.Root.Send(self, tick{epoch}) })
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
	b.phase = phaseIdle
}

// askTimeout bounds asks to the being's own fast children (the ledger).
const askTimeout = 10 * time.Second

// ask sends msg to pid and continues with cont on the mailbox when the
// answer arrives or the deadline passes. Continuations of work abandoned
// since (a shutdown, a restart) are dropped.
func (b *Being) ask(ctx actor.Context, pid *actor.PID, msg any, timeout time.Duration, cont func(any, error)) {
	epoch := b.epoch
	future := ctx.RequestFuture(pid, msg, timeout)
	ctx.ReenterAfter(future, func(res any, err error) {
		if b.epoch != epoch {
			return
		}
		cont(res, err)
	})
}

// permanentBrama reports a permanent Brama failure, which ends a being
// with status failed (docs/cycle.md#run-loop-errors-and-shutdown).
func permanentBrama(err error) bool {
	return err != nil && supervision.ClassOf(err) == supervision.ClassBrama && supervision.KindOf(err) == supervision.Permanent
}
