package being

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/ledger"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/tools/catalog"
	"github.com/wisent/singularity/internal/tools/most"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
)

// fileTimeout bounds a file tool on its worker goroutine.
const fileTimeout = time.Minute

func fileErrorCode(name string) string {
	if name == builtin.FileRead {
		return builtin.CodeFileRead
	}
	return builtin.CodeFileWrite
}

// catalogView is the registered catalogue and the tool list sent to
// the model on every round (copied once, not per round). It is shared
// by every being with the same tools (sharedCatalog) and never changed.
type catalogView struct {
	cat     *catalog.Catalog
	tools   []chat.Tool
	encoded json.RawMessage // tools as sent, encoded once
	bytes   int             // the tools' JSON size, for the reservation's body bound
}

// rebuildCatalog merges Las tools, built-ins and Most tools
// (docs/tools.md#the-catalogue). At boot a registration failure is fatal;
// after a Las restart the caller keeps the previous catalogue and journals a
// warning.
func (b *Being) rebuildCatalog() error {
	var lasTools []chat.Tool
	if b.link == lasUp {
		lasTools = b.lasTools
	}
	view, err := sharedCatalog(lasTools, b.opts.Most != nil)
	if err != nil {
		return err
	}
	b.catalog = view
	return nil
}

// nextTool runs the next tool call of the round, or starts the next
// round when all have run (docs/cycle.md#anatomy-of-a-cycle step 3).
func (b *Being) nextTool(ctx actor.Context) {
	if b.phase == phaseAbandoning {
		b.abandonWork(ctx, b.stop.abandonWhy)
		return
	}
	if b.cycle.next >= len(b.cycle.calls) {
		b.startRound(ctx)
		return
	}
	call := b.cycle.calls[b.cycle.next]
	b.cycle.next++
	began := time.Now()
	b.runTool(ctx, call, func(r toolResult) {
		r.elapsed = time.Since(began)
		b.finishTool(ctx, call, r)
	})
}

// toolResult is what one tool call produced: its outcome, the mind
// changes to journal with it, and what to do once that step is durable
// (start a spawned child).
type toolResult struct {
	outcome outcome.Outcome
	changes []state.Event
	after   func(ctx actor.Context)
	elapsed time.Duration // from the call to its outcome (for the observer)
}

// only is a result with nothing but an outcome.
func only(done func(toolResult)) func(outcome.Outcome) {
	return func(o outcome.Outcome) { done(toolResult{outcome: o}) }
}

// runTool produces the result of one call, synchronously for the
// built-ins and by message for Las, Most, the model list, the file
// tools and a child's state directory.
func (b *Being) runTool(ctx actor.Context, call chat.ToolCall, done func(toolResult)) {
	name := call.Function.Name
	origin, known := b.catalog.cat.Lookup(name)
	if !known {
		done(toolResult{outcome: catalog.UnknownTool()})
		return
	}
	args, ok := objectArguments(call.Function.Arguments)
	if !ok {
		done(toolResult{outcome: outcome.Failure("invalid_arguments", "arguments must be a JSON object")})
		return
	}
	switch origin {
	case catalog.Las:
		b.cycle.waiting = waitLas
		b.callLas(ctx, name, args, only(done))
	case catalog.Most:
		b.cycle.waiting = waitMost
		b.callMost(ctx, name, args, only(done))
	case catalog.Builtin:
		b.callBuiltin(ctx, name, args, done)
	}
}

// callBuiltin runs a built-in tool. The mind tools run on the mailbox
// (they change the being's state and take microseconds); the file tools
// do blocking file I/O and never touch the state, so they run on a
// worker goroutine; switch_model first asks the gateway for the models
// Brama advertises, by message.
func (b *Being) callBuiltin(ctx actor.Context, name string, args json.RawMessage, done func(toolResult)) {
	switch name {
	case builtin.SelfSwitchModel:
		b.cycle.waiting = waitModels
		b.withModels(ctx, func(advertised []string, selectors bool) {
			b.runBuiltin(ctx, builtin.Request{Name: name, Args: args, Mind: &b.st.Mind, Advertised: advertised, NoSelectors: !selectors}, done)
		})
	case builtin.FileRead, builtin.FileWrite:
		b.cycle.waiting = waitFile
		tools := b.tools
		b.async(ctx, fileTimeout, func() any {
			return tools.Call(builtin.Request{Name: name, Args: args}).Outcome
		}, func(res any, err error) {
			o, ok := res.(outcome.Outcome)
			if err != nil || !ok {
				o = outcome.Failure(fileErrorCode(name), "the file operation did not finish in time")
			}
			done(toolResult{outcome: o})
		})
	default:
		b.runBuiltin(ctx, builtin.Request{Name: name, Args: args, Mind: &b.st.Mind, Available: b.available()}, done)
	}
}

// runBuiltin runs a built-in tool on the mailbox. Its mind changes go
// with its outcome into the journal; a spawn first has the child's state
// directory written (spawnChild).
func (b *Being) runBuiltin(ctx actor.Context, req builtin.Request, done func(toolResult)) {
	res := b.tools.Call(req)
	if spawn, ok := res.Effect.(builtin.Spawn); ok {
		b.cycle.waiting = waitChild
		b.spawnChild(ctx, spawn, done)
		return
	}
	done(toolResult{outcome: res.Outcome, changes: res.Changes})
}

// objectArguments accepts only a JSON object (docs/tools.md#the-catalogue);
// truncated or malformed arguments fail as invalid_arguments.
func objectArguments(text string) (json.RawMessage, bool) {
	trimmed := strings.TrimSpace(text)
	if trimmed == "" {
		trimmed = "{}"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(trimmed), &obj); err != nil || obj == nil {
		return nil, false
	}
	return json.RawMessage(trimmed), true
}

// finishTool applies the output boundary and journals the call as one
// step (docs/cycle.md#anatomy-of-a-cycle): tool_finished with the tool
// message and the action record, revenue_credited when the result is
// trusted revenue evidence, then the call's mind changes. Only once that
// step is durable does any of it take effect.
func (b *Being) finishTool(ctx actor.Context, call chat.ToolCall, res toolResult) {
	b.cycle.waiting = waitNothing
	name := b.catalog.cat.Canonical(call.Function.Name)
	raw := res.outcome
	o, reason := boundary.Screen{Workspace: b.opts.Workspace, Secrets: b.opts.Secrets}.Apply(raw)
	if reason != "" {
		b.log.Warn("tool output rejected by the output boundary", "tool", name, "reason", reason)
	}
	at := b.opts.now()
	finished := state.ToolFinished(at, b.st.Cycle, name, o.Status)
	finished.Chat = &chat.Message{Role: chat.RoleTool, ToolCallID: call.ID, Name: name, Content: o.Envelope()}
	finished.Action = &state.Action{Cycle: b.st.Cycle, Tool: name, Status: o.Status, At: at}
	var created state.CreatedResources
	most.RecordCreated(&created, o)
	if len(created.ChatIDs)+len(created.MessageIDs) > 0 {
		finished.Created = &created
	}
	b.cycle.actions = append(b.cycle.actions, name)
	// Revenue is read from the result as returned, before the boundary:
	// withholding output from the model does not withhold revenue
	// (docs/money.md#credit).
	if raw.Status != outcome.Success || !ledger.Trusted(name) {
		b.commitTool(ctx, finished, nil, res)
		return
	}
	b.cycle.waiting = waitLedger
	b.ask(ctx, b.ledger, messages.CreditRequest{Tool: name, Result: raw.Content}, askTimeout, func(reply any, err error) {
		b.cycle.waiting = waitNothing
		credit, ok := reply.(messages.CreditResponse)
		switch {
		case err != nil || !ok:
			b.warn("revenue not credited: " + errText(err, "unexpected ledger reply"))
			b.commitTool(ctx, finished, nil, res)
		case credit.Credited:
			b.commitTool(ctx, finished, &credit, res)
		default:
			b.commitTool(ctx, finished, nil, res)
		}
	})
}

// commitTool writes a call's step and, once it is durable, tells the
// ledger of the credit, carries out what the call left for after (a
// spawned child starts) and goes on with the next call.
func (b *Being) commitTool(ctx actor.Context, finished state.Event, credit *messages.CreditResponse, res toolResult) {
	step := []state.Event{finished}
	if credit != nil {
		step = append(step, state.RevenueCredited(finished.At, finished.Cycle, credit.Amount, credit.Source))
	}
	step = append(step, res.changes...)
	b.commitTimed(ctx, step, waitFile, res.elapsed, "", func(ctx actor.Context) {
		if credit != nil {
			ctx.Send(b.ledger, messages.RevenueCredited{Amount: credit.Amount})
		}
		if res.after != nil {
			res.after(ctx)
		}
		b.nextTool(ctx)
	})
}

// callLas forwards a call to the Las actor under the MCP deadline. When
// Las is down the call fails as unknown_tool (docs/las.md#las-unavailable).
func (b *Being) callLas(ctx actor.Context, name string, args json.RawMessage, done func(outcome.Outcome)) {
	if b.las == nil || b.link != lasUp {
		done(catalog.UnknownTool())
		return
	}
	deadline := b.opts.clock().Add(b.opts.MCPTimeout)
	req := messages.LasCallRequest{Tool: name, Arguments: args, Deadline: deadline}
	b.ask(ctx, b.las, req, b.opts.MCPTimeout+askTimeout, func(res any, err error) {
		resp, ok := res.(messages.LasCallResponse)
		if err != nil || !ok {
			done(outcome.Unknown("mcp", "Las did not answer: "+errText(err, "unexpected reply")))
			return
		}
		done(resp.Outcome)
	})
}

// callMost runs a Most tool on a worker goroutine and continues by
// message.
func (b *Being) callMost(ctx actor.Context, name string, args json.RawMessage, done func(outcome.Outcome)) {
	client, log := b.opts.Most, b.log
	timeout := b.modelTimeout()
	b.async(ctx, timeout, func() any {
		c, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		o, err := client.Call(c, name, args)
		if err != nil {
			log.Warn("Most call failed", "tool", name, "err", err)
		}
		return o
	}, func(res any, err error) {
		o, ok := res.(outcome.Outcome)
		if err != nil || !ok {
			done(outcome.Unknown("remote", "Most did not answer in time"))
			return
		}
		done(o)
	})
}

// withModels asks the gateway which models Brama advertises (for
// singularity_self_switch_model) without blocking the mailbox, and whether
// it is Brama, whose selectors may be switched to. A listing that failed
// continues with nil: no model id can be confirmed; one that did not come
// in time also refuses selectors, since the gateway is unknown.
func (b *Being) withModels(ctx actor.Context, cont func(advertised []string, selectors bool)) {
	b.ask(ctx, b.opts.Gateway, messages.ModelsRequest{}, b.modelTimeout(), func(res any, err error) {
		resp, ok := res.(messages.ModelsResponse)
		if err != nil || !ok {
			cont(nil, false)
			return
		}
		if resp.Err != nil {
			cont(nil, resp.Selectors)
			return
		}
		cont(resp.IDs, resp.Selectors)
	})
}

// async runs work on a goroutine and continues with its result on the
// mailbox, within timeout.
func (b *Being) async(ctx actor.Context, timeout time.Duration, work func() any, cont func(any, error)) {
	epoch := b.epoch
	system := ctx.ActorSystem()
	future := actor.NewFuture(system, timeout)
	go func() { system.Root.Send(future.PID(), work()) }()
	ctx.ReenterAfter(future, func(res any, err error) {
		if b.epoch != epoch {
			return
		}
		cont(res, err)
	})
}

// errText is the text of an ask's failure (see replyError).
func errText(err error, fallback string) string { return replyError(err, fallback).Error() }

// replyError is an ask's failure: err, or fallback when the answer came
// but was not the expected type.
func replyError(err error, fallback string) error {
	if err != nil {
		return err
	}
	return errors.New(fallback)
}
