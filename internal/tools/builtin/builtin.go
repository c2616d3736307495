package builtin

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/gateway"
)

// Limits of docs/tools.md#built-in-tools.
const (
	// MaxMemories is how many memories a being keeps; older ones drop off
	// (the state applies the cap when a memory_added is applied).
	MaxMemories = state.MaxMemories
	// RecallLimit is how many matches a recall returns.
	RecallLimit = 50
	// MaxFileBytes bounds a file read or written by the file tools.
	MaxFileBytes = 2 << 20
	// MaxPathBytes bounds the path argument of the file tools
	// (docs/tools.md#argument-rules): PATH_MAX on Linux.
	MaxPathBytes = 4096
)

// Error codes of built-in tool failures.
const (
	CodeInvalidArguments  = "invalid_arguments"
	CodeUnknownTool       = "unknown_tool"
	CodeModelUnavailable  = "model_unavailable"
	CodeModelUnpriced     = "model_unpriced"
	CodeInvalidPath       = "invalid_path"
	CodeWorkspaceBoundary = "workspace_boundary"
	CodeFileRead          = "file_read"
	CodeFileWrite         = "file_write"
	CodeChildState        = "child_state"
	CodeChildSpawn        = "child_spawn"
	CodeInsufficientFunds = "insufficient_funds"
)

// Funding says where a spawned child's money comes from
// (docs/money.md#funded-children).
type Funding int

const (
	// Transfer moves the child's endowment_usd from the parent (the
	// default): the family's money is conserved.
	Transfer Funding = iota
	// Mint gives every child the configured starting balance out of
	// nothing, as the reference does; endowment_usd is ignored.
	Mint
)

// MaxEndowmentScale is how many fractional digits endowment_usd may have.
const MaxEndowmentScale = 12

// ChildRequest asks the being to create and start one child.
type ChildRequest struct {
	ID        string // the child's id, also its directory name under children/
	Name      string
	Ticker    string
	Specialty string
	// Endowment is the amount moved from the parent (Transfer); zero
	// when the child's balance is minted.
	Endowment money.Amount
}

// ChildStarted is what the being reports about a child it started.
type ChildStarted struct {
	Actor    string // the child actor's id, shown to the model
	StateDir string // the child's state directory, recorded in the mind
	Status   string // the child's status to record; empty means "running"
}

// Env is what the built-in tools need besides the being's mind. Zero
// fields have the documented defaults.
type Env struct {
	// Workspace is the directory the file tools are confined to. It must
	// exist; New resolves it to an absolute path without symlinks.
	Workspace string
	// Now returns the current instant; nil means time.Now.
	Now func() time.Time
	// NewID returns a fresh unique id for memories and children; nil means
	// a random UUID.
	NewID func() string
	// Funding is where children's money comes from.
	Funding Funding
}

// Tools runs the built-in tools of one being.
type Tools struct {
	env  Env
	root string // the workspace, absolute and free of symlinks
}

// New checks env's workspace and returns the tools.
func New(env Env) (*Tools, error) {
	abs, err := filepath.Abs(env.Workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.NewID == nil {
		env.NewID = uuid.NewString
	}
	return &Tools{env: env, root: root}, nil
}

// Request is one call of a built-in tool.
type Request struct {
	Name string
	Args json.RawMessage
	// Mind is the calling being's mind. The tools only read it (recall
	// searches it); what they change comes back as Result.Changes. The
	// file tools never look at it (nil is fine for them).
	Mind *state.Mind
	// Advertised is the list of model ids Brama advertises now, asked
	// just before a switch_model call; nil (no list could be had) lets
	// switch_model accept only selectors.
	Advertised []string
	// Available is the most a spawn may endow its child with now: the
	// being's remaining balance less the reservation of its own next
	// completion (docs/money.md#funded-children).
	Available money.Amount
	// NoSelectors refuses Brama's selectors in switch_model: the gateway
	// is another OpenAI-compatible one, which knows only listed ids
	// (docs/brama.md#model-selection).
	NoSelectors bool
	// Free reports whether switch_model must refuse a model because it
	// would be charged nothing (docs/money.md#no-free-model-by-accident);
	// nil refuses none.
	Free func(model string) bool
	// Family is the caller's parent, which message_send's "parent"
	// names (the zero value for the root).
	Family Family
}

// Result is what a call produced: its outcome, the changes it makes to
// the mind, and, for the tool whose effect lies outside the mind, the
// Effect the being is to carry out.
type Result struct {
	Outcome outcome.Outcome
	// Changes are the mind changes of the call, as journal events
	// (state.MemoryAdded, state.ModelSwitched, …) without at and cycle.
	// The being journals them with the call's outcome and applies them
	// once that step is durable: nothing changes before.
	Changes []state.Event
	// Effect is nil when the outcome is final. Otherwise the being does
	// what it says; a Spawn's outcome is known only after that (see
	// Spawn.Finish).
	Effect Effect
}

// Effect is work a built-in tool leaves to its being: the being owns
// actors and state directories, the tools do not: Spawn and Send.
type Effect interface{ effect() }

// Spawn asks the being to create the child's state directory and start
// its actor (or only create it, in once mode); the being then calls
// Finish with what happened to get the call's outcome and its change.
type Spawn struct {
	Child ChildRequest
	At    time.Time // when the tool ran: the child's created_at
}

func (Spawn) effect() {}

// Record is the mind's record of the child, living in dir; its status
// is left to the caller. A funded child's record carries its endowment.
func (s Spawn) Record(dir string) state.Child {
	req := s.Child
	c := state.Child{
		ID: req.ID, Name: req.Name, Ticker: req.Ticker, StateDir: dir,
		CreatedAt: state.Time{Time: s.At.UTC()}, Specialty: req.Specialty,
	}
	if req.Endowment.Sign() > 0 {
		amount := req.Endowment
		c.Endowment = &amount
	}
	return c
}

// ErrChildState marks a spawn that failed creating the child's state
// directory (the outcome child_state); any other spawn error means the
// actor did not start (child_spawn).
var ErrChildState = errors.New("child state directory")

// Finish returns the spawn call's result: its outcome and the child
// record to add to the mind. err is the being's failure to carry out the
// spawn, nil when started describes the child.
func (s Spawn) Finish(started ChildStarted, err error) Result {
	switch {
	case errors.Is(err, ErrChildState):
		return final(outcome.Failure(CodeChildState, "child state directory could not be created"))
	case err != nil:
		return final(outcome.Failure(CodeChildSpawn, "child being could not be started"))
	}
	status := started.Status
	if status == "" {
		status = state.StatusRunning
	}
	req := s.Child
	child := s.Record(started.StateDir)
	child.Status = status
	return changed(succeed(struct {
		ChildID string `json:"child_id"`
		Actor   string `json:"actor"`
	}{req.ID, started.Actor}), state.ChildAdded(child))
}

// Call runs one built-in tool and returns its result; it never panics on
// model input. The file tools do blocking file I/O and touch nothing but
// the workspace, so a caller may run them on a worker goroutine.
func (t *Tools) Call(req Request) Result {
	mind, args := req.Mind, req.Args
	switch req.Name {
	case MemoryRemember:
		return t.remember(args)
	case MemoryRecall:
		return final(recall(mind, args))
	case SelfSetPrompt:
		return setPrompt(args)
	case SelfAddRule:
		return addRule(args)
	case SelfAddLearning:
		return addLearning(args)
	case SelfSwitchModel:
		return switchModel(args, req.Advertised, !req.NoSelectors, req.Free)
	case SpawnChild:
		return t.spawnChild(args, req.Available)
	case FileRead:
		return final(t.readFile(args))
	case FileWrite:
		return final(t.writeFile(args))
	case MessageSend:
		return t.messageSend(args, mind, req.Family)
	case SelfSleep:
		return t.selfSleep(args)
	default:
		return final(outcome.Failure(CodeUnknownTool, "tool is not in the current catalog"))
	}
}

func final(o outcome.Outcome) Result { return Result{Outcome: o} }

func changed(o outcome.Outcome, changes ...state.Event) Result {
	return Result{Outcome: o, Changes: changes}
}

// field is one argument of a built-in tool.
type field struct {
	key string
	max int
	// content marks a file body: kept exactly (not trimmed), may be empty
	// and may hold line breaks; only NUL is refused.
	content bool
}

// parseArgs checks raw against fields and returns the argument values in
// field order, or the invalid_arguments outcome. Keys outside fields are
// refused like the schema's additionalProperties false says.
func parseArgs(raw json.RawMessage, fields ...field) ([]string, *outcome.Outcome) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		o := outcome.Failure(CodeInvalidArguments, "arguments must be a JSON object")
		return nil, &o
	}
	invalid := func(key string) ([]string, *outcome.Outcome) {
		o := outcome.Failure(CodeInvalidArguments, key+" is invalid")
		return nil, &o
	}
	values := make([]string, len(fields))
	for i, f := range fields {
		v, ok := obj[f.key]
		if !ok {
			return invalid(f.key)
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return invalid(f.key)
		}
		if !f.content {
			s = strings.TrimSpace(s)
		}
		if !validText(s, f.max, f.content) {
			return invalid(f.key)
		}
		values[i] = s
	}
	if len(obj) > len(fields) {
		extra := make([]string, 0, len(obj))
		for k := range obj {
			if !slices.ContainsFunc(fields, func(f field) bool { return f.key == k }) {
				extra = append(extra, k)
			}
		}
		slices.Sort(extra)
		return invalid(extra[0])
	}
	return values, nil
}

// validText applies the argument rules: within max bytes; for text,
// non-empty and free of control characters; for file content, free of NUL.
func validText(s string, max int, content bool) bool {
	if len(s) > max {
		return false
	}
	if content {
		return strings.IndexByte(s, 0) < 0
	}
	return s != "" && !strings.ContainsFunc(s, unicode.IsControl)
}

// succeed marshals v as the success content.
func succeed(v any) outcome.Outcome {
	b, err := json.Marshal(v)
	if err != nil {
		// Only plain structs of strings and numbers reach here.
		panic(fmt.Sprintf("builtin: marshal result: %v", err))
	}
	return outcome.Succeeded(b)
}

func (t *Tools) remember(args json.RawMessage) Result {
	v, bad := parseArgs(args, field{key: "kind", max: 64}, field{key: "text", max: 16 << 10})
	if bad != nil {
		return final(*bad)
	}
	m := state.Memory{ID: t.env.NewID(), Kind: v[0], Text: v[1], CreatedAt: state.Time{Time: t.env.Now().UTC()}}
	return changed(succeed(struct {
		MemoryID string `json:"memory_id"`
	}{m.ID}), state.MemoryAdded(m))
}

func recall(mind *state.Mind, args json.RawMessage) outcome.Outcome {
	v, bad := parseArgs(args, field{key: "query", max: 1024})
	if bad != nil {
		return *bad
	}
	q := strings.ToLower(v[0])
	found := []state.Memory{}
	for i := len(mind.Memories) - 1; i >= 0 && len(found) < RecallLimit; i-- {
		m := mind.Memories[i]
		if strings.Contains(strings.ToLower(m.Kind), q) || strings.Contains(strings.ToLower(m.Text), q) {
			found = append(found, m)
		}
	}
	return succeed(struct {
		Memories []state.Memory `json:"memories"`
	}{found})
}

func setPrompt(args json.RawMessage) Result {
	v, bad := parseArgs(args, field{key: "prompt", max: 64 << 10})
	if bad != nil {
		return final(*bad)
	}
	return changed(succeed(struct {
		Updated bool `json:"updated"`
	}{true}), state.PromptSet(v[0]))
}

func addRule(args json.RawMessage) Result {
	v, bad := parseArgs(args, field{key: "rule", max: 4 << 10})
	if bad != nil {
		return final(*bad)
	}
	return changed(succeed(struct {
		Rule string `json:"rule"`
	}{v[0]}), state.RuleAdded(v[0]))
}

func addLearning(args json.RawMessage) Result {
	v, bad := parseArgs(args, field{key: "learning", max: 8 << 10})
	if bad != nil {
		return final(*bad)
	}
	return changed(succeed(struct {
		Learning string `json:"learning"`
	}{v[0]}), state.LearningAdded(v[0]))
}

// switchModel accepts a selector (when selectors is set) or a model in
// advertised. A listing that failed (nil) counts as not advertised: the
// model cannot be confirmed.
func switchModel(args json.RawMessage, advertised []string, selectors bool, free func(string) bool) Result {
	v, bad := parseArgs(args, field{key: "model", max: 256})
	if bad != nil {
		return final(*bad)
	}
	model := v[0]
	if !(selectors && gateway.IsSelector(model)) && !slices.Contains(advertised, model) {
		return final(outcome.Failure(CodeModelUnavailable, "Brama does not advertise that model"))
	}
	if free != nil && !gateway.IsSelector(model) && free(model) {
		return final(outcome.Failure(CodeModelUnpriced, prices.NoPrice(model)))
	}
	return changed(succeed(struct {
		Model string `json:"model"`
	}{model}), state.ModelSwitched(model))
}

// spawnChild checks the arguments and the endowment, and leaves the
// spawn to the being. With Transfer funding endowment_usd is required: a
// decimal (a JSON string, or a number read from its literal text) above
// zero with at most 12 fractional digits, no more than available. With
// Mint it is optional and ignored.
func (t *Tools) spawnChild(args json.RawMessage, available money.Amount) Result {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return final(outcome.Failure(CodeInvalidArguments, "arguments must be a JSON object"))
	}
	raw, given := obj["endowment_usd"]
	delete(obj, "endowment_usd")
	rest, _ := json.Marshal(obj)
	v, bad := parseArgs(rest, field{key: "name", max: 128}, field{key: "ticker", max: 32}, field{key: "specialty", max: 256})
	if bad != nil {
		return final(*bad)
	}
	req := ChildRequest{ID: "", Name: v[0], Ticker: v[1], Specialty: v[2]}
	if t.env.Funding == Transfer {
		amount, ok := parseEndowment(raw, given)
		if !ok {
			return final(outcome.Failure(CodeInvalidArguments, "endowment_usd is invalid"))
		}
		if amount.Cmp(available) > 0 {
			return final(outcome.Failure(CodeInsufficientFunds, "endowment exceeds the available balance"))
		}
		req.Endowment = amount
	}
	req.ID = t.env.NewID()
	return Result{Effect: Spawn{Child: req, At: t.env.Now()}}
}

// parseEndowment reads endowment_usd: a decimal string or number, above
// zero, with at most MaxEndowmentScale fractional digits.
func parseEndowment(raw json.RawMessage, given bool) (money.Amount, bool) {
	if !given {
		return money.Zero, false
	}
	text := strings.TrimSpace(string(raw))
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		text = strings.TrimSpace(s)
	} else if !json.Valid(raw) || strings.HasPrefix(text, "{") || strings.HasPrefix(text, "[") || strings.HasPrefix(text, "\"") {
		return money.Zero, false
	}
	if text == "" || len(text) > 64 {
		return money.Zero, false
	}
	amount, err := money.Parse(text)
	if err != nil || amount.Sign() <= 0 || !amount.RoundDown().Equal(amount) {
		return money.Zero, false
	}
	return amount, true
}
