package being

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/store/budget"
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
	if b.las.link == lasUp {
		lasTools = b.las.tools
	}
	view, err := sharedCatalog(lasTools, catalog.Extras{Most: b.opts.Most != nil, Family: b.opts.FamilyTools})
	if err != nil {
		return err
	}
	b.catalog = view
	return nil
}

// toolCall is the tool call in progress and what its steps need: the
// call, when it began, a built-in's arguments while the model list is
// asked, its result while its step is written (a child to start once it
// is durable), and a spawn in progress.
type toolCall struct {
	call   chat.ToolCall
	began  time.Time
	args   json.RawMessage
	result toolResult
	spawn  *spawning
}

// toolResult is what one tool call produced: its outcome, the mind
// changes to journal with it, and a spawned child to start once that
// step is durable.
type toolResult struct {
	outcome outcome.Outcome
	changes []state.Event
	child   *childStart
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
	b.cycle.tool = toolCall{call: call, began: b.opts.clock()}
	b.runTool(ctx, call)
}

// runTool produces the result of one call, synchronously for the
// built-ins and by reply for Las, Most, the model list, the file tools
// and a child's state directory; each ends in toolDone.
func (b *Being) runTool(ctx actor.Context, call chat.ToolCall) {
	name := call.Function.Name
	origin, known := b.catalog.cat.Lookup(name)
	if !known {
		b.toolDone(ctx, toolResult{outcome: catalog.UnknownTool()})
		return
	}
	args, ok := objectArguments(call.Function.Arguments)
	if !ok {
		b.toolDone(ctx, toolResult{outcome: outcome.Failure("invalid_arguments", "arguments must be a JSON object")})
		return
	}
	switch origin {
	case catalog.Las:
		b.cycle.waiting = waitLas
		b.callLas(ctx, name, args)
	case catalog.Most:
		b.cycle.waiting = waitMost
		b.callMost(ctx, name, args)
	case catalog.Builtin:
		b.callBuiltin(ctx, name, args)
	}
}

// callBuiltin runs a built-in tool. The mind tools run on the mailbox
// (they change the being's state and take microseconds); the file tools
// do blocking file I/O and never touch the state, so they run on a
// worker goroutine; switch_model first asks the gateway for the models
// Brama advertises (modelsAnswered).
func (b *Being) callBuiltin(ctx actor.Context, name string, args json.RawMessage) {
	switch name {
	case builtin.SelfSwitchModel:
		b.cycle.waiting = waitModels
		b.cycle.tool.args = args
		b.request(ctx, b.opts.Gateway, messages.ModelsRequest{}, b.modelTimeout(), replyModels)
	case builtin.FileRead, builtin.FileWrite:
		b.cycle.waiting = waitFile
		tools := b.tools
		b.work(ctx, replyFile, fileTimeout, func() any {
			return tools.Call(builtin.Request{Name: name, Args: args}).Outcome
		})
	default:
		b.runBuiltin(ctx, builtin.Request{Name: name, Args: args, Mind: &b.st.Mind, Available: b.available(), Family: b.family()})
	}
}

// modelsAnswered runs switch_model with the models Brama advertises and
// whether the gateway is Brama, whose selectors may be switched to. A
// listing that failed gives no model ids: none can be confirmed; one
// that did not come in time also refuses selectors, since the gateway is
// unknown.
func (b *Being) modelsAnswered(ctx actor.Context, r reply) {
	var advertised []string
	selectors := false
	if resp, ok := r.res.(messages.ModelsResponse); r.err == nil && ok {
		selectors = resp.Selectors
		if resp.Err == nil {
			advertised = resp.IDs
		}
	}
	args := b.cycle.tool.args
	b.cycle.tool.args = nil
	req := builtin.Request{Name: builtin.SelfSwitchModel, Args: args, Mind: &b.st.Mind, Advertised: advertised, NoSelectors: !selectors}
	if b.opts.RequirePrice {
		options := b.opts.Pricing.Tokens()
		req.Free = func(model string) bool { return b.opts.Prices.Free(model, options) }
	}
	b.runBuiltin(ctx, req)
}

// fileAnswered takes a file tool's outcome.
func (b *Being) fileAnswered(ctx actor.Context, r reply) {
	o, ok := r.res.(outcome.Outcome)
	if r.err != nil || !ok {
		o = outcome.Failure(fileErrorCode(b.cycle.tool.call.Function.Name), "the file operation did not finish in time")
	}
	b.toolDone(ctx, toolResult{outcome: o})
}

// runBuiltin runs a built-in tool on the mailbox. Its mind changes go
// with its outcome into the journal; a spawn first has the child's state
// directory written (spawnChild); a message is sent once its step is
// durable (sendMessage).
func (b *Being) runBuiltin(ctx actor.Context, req builtin.Request) {
	res := b.tools.Call(req)
	switch effect := res.Effect.(type) {
	case builtin.Spawn:
		b.cycle.waiting = waitChild
		b.spawnChild(ctx, effect)
		return
	case builtin.Send:
		b.sendMessage(ctx, effect)
		return
	}
	b.toolDone(ctx, toolResult{outcome: res.Outcome, changes: res.Changes})
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

// toolDone applies the output boundary to the call's result and
// journals the call as one step (docs/cycle.md#anatomy-of-a-cycle):
// tool_finished with the tool message and the action record,
// revenue_credited when the result is trusted revenue evidence
// (budget.Revenue), then the call's mind changes. Only once that step is
// durable does any of it take effect.
func (b *Being) toolDone(ctx actor.Context, res toolResult) {
	b.cycle.waiting = waitNothing
	tool := b.cycle.tool
	end := b.opts.clock()
	b.cycle.elapsed = end.Sub(tool.began)
	call := tool.call
	name := b.catalog.cat.Canonical(call.Function.Name)
	raw := res.outcome
	o, reason := boundary.Screen{Workspace: b.opts.Workspace, Secrets: b.opts.Secrets}.Apply(raw)
	if reason != "" {
		b.log.Warn("tool output rejected by the output boundary", "tool", name, "reason", reason)
	}
	at := state.Time{Time: end.UTC()}
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
	step := []state.Event{finished}
	if raw.Status == outcome.Success {
		if v, ok := budget.Revenue(name, raw.Content); ok {
			step = append(step, state.RevenueCredited(at, b.st.Cycle, v, name))
		}
	}
	b.commitTool(ctx, step, res)
}

// commitTool writes a call's step, its mind changes last; once it is
// durable, toolDurable starts a spawned child and goes on with the next
// call.
func (b *Being) commitTool(ctx actor.Context, step []state.Event, res toolResult) {
	b.cycle.tool.result = toolResult{child: res.child}
	b.commit(ctx, append(step, res.changes...), nextTool)
}

// toolDurable follows a call's durable step (its credit, if any,
// applied): it starts a spawned child and goes on with the next call.
func (b *Being) toolDurable(ctx actor.Context) {
	tool := b.cycle.tool
	b.cycle.tool = toolCall{}
	if c := tool.result.child; c != nil {
		b.startChild(ctx, c)
	}
	b.nextTool(ctx)
}

// callLas forwards a call to the Las actor under the MCP deadline. When
// Las is down the call fails as unknown_tool (docs/las.md#las-unavailable).
func (b *Being) callLas(ctx actor.Context, name string, args json.RawMessage) {
	if b.las.pid == nil || b.las.link != lasUp {
		b.toolDone(ctx, toolResult{outcome: catalog.UnknownTool()})
		return
	}
	deadline := b.opts.clock().Add(b.opts.MCPTimeout)
	req := messages.LasCallRequest{Tool: name, Arguments: args, Deadline: deadline}
	b.request(ctx, b.las.pid, req, b.opts.MCPTimeout+askTimeout, replyLas)
}

// lasAnswered takes a Las call's outcome.
func (b *Being) lasAnswered(ctx actor.Context, r reply) {
	resp, ok := r.res.(messages.LasCallResponse)
	if r.err != nil || !ok {
		b.toolDone(ctx, toolResult{outcome: outcome.Unknown("mcp", "Las did not answer: "+errText(r.err, "unexpected reply"))})
		return
	}
	b.toolDone(ctx, toolResult{outcome: resp.Outcome})
}

// callMost runs a Most tool on a worker goroutine.
func (b *Being) callMost(ctx actor.Context, name string, args json.RawMessage) {
	client, log := b.opts.Most, b.log
	timeout := b.modelTimeout()
	b.work(ctx, replyMost, timeout, func() any {
		c, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		o, err := client.Call(c, name, args)
		if err != nil {
			log.Warn("Most call failed", "tool", name, "err", err)
		}
		return o
	})
}

// mostAnswered takes a Most call's outcome.
func (b *Being) mostAnswered(ctx actor.Context, r reply) {
	o, ok := r.res.(outcome.Outcome)
	if r.err != nil || !ok {
		o = outcome.Unknown("remote", "Most did not answer in time")
	}
	b.toolDone(ctx, toolResult{outcome: o})
}
