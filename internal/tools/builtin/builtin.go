package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
)

// Limits of SPEC §11.
const (
	// MaxMemories is how many memories a being keeps; older ones drop off.
	MaxMemories = 1000
	// RecallLimit is how many matches a recall returns.
	RecallLimit = 50
	// MaxFileBytes bounds a file read or written by the file tools.
	MaxFileBytes = 2 << 20
	// MaxPathBytes bounds the path argument of the file tools. The spec
	// gives no bound; this is PATH_MAX on Linux.
	MaxPathBytes = 4096
)

// Error codes of built-in tool failures.
const (
	CodeInvalidArguments  = "invalid_arguments"
	CodeUnknownTool       = "unknown_tool"
	CodeModelUnavailable  = "model_unavailable"
	CodeInvalidPath       = "invalid_path"
	CodeWorkspaceBoundary = "workspace_boundary"
	CodeFileRead          = "file_read"
	CodeFileWrite         = "file_write"
	CodeChildState        = "child_state"
	CodeChildSpawn        = "child_spawn"
)

// ErrChildState is wrapped by Env.Spawn when the child's state directory
// could not be created; any other Spawn error means the actor did not
// start.
var ErrChildState = errors.New("child state directory")

// ChildRequest asks the being to create and start one child (SPEC §15).
type ChildRequest struct {
	ID        string // the child's id, also its directory name under children/
	Name      string
	Ticker    string
	Specialty string
}

// ChildStarted is what the being reports about a child it started.
type ChildStarted struct {
	Actor    string // the child actor's id, shown to the model
	StateDir string // the child's state directory, recorded in the mind
	Status   string // the child's status to record; empty means "running"
}

// Env is what the built-in tools need besides the being's state. Zero
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
	// Models lists the model ids Brama currently advertises; nil means
	// only selectors are accepted by switch_model.
	Models func(ctx context.Context) ([]string, error)
	// Spawn creates the child's state directory and starts its actor; nil
	// means spawn_child always fails with child_spawn.
	Spawn func(ctx context.Context, req ChildRequest) (ChildStarted, error)
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

// Has reports whether name is a built-in tool.
func Has(name string) bool {
	return slices.ContainsFunc(specs, func(s spec) bool { return s.name == name })
}

// Call runs built-in tool name with its raw JSON arguments against b and
// returns its outcome; it never panics on model input. Tools that change
// the mind change b.Mind in place; the caller saves the state. The file
// tools never touch b (it may be nil for them) and do blocking file I/O,
// so a caller may run them on a worker goroutine.
func (t *Tools) Call(ctx context.Context, b *state.Being, name string, args json.RawMessage) outcome.Outcome {
	switch name {
	case MemoryRemember:
		return t.remember(b, args)
	case MemoryRecall:
		return recall(b, args)
	case SelfSetPrompt:
		return setPrompt(b, args)
	case SelfAddRule:
		return addRule(b, args)
	case SelfAddLearning:
		return addLearning(b, args)
	case SelfSwitchModel:
		return t.switchModel(ctx, b, args)
	case SpawnChild:
		return t.spawnChild(ctx, b, args)
	case FileRead:
		return t.readFile(args)
	case FileWrite:
		return t.writeFile(args)
	default:
		return outcome.Failure(CodeUnknownTool, "tool is not in the current catalog")
	}
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

func (t *Tools) remember(b *state.Being, args json.RawMessage) outcome.Outcome {
	v, bad := parseArgs(args, field{key: "kind", max: 64}, field{key: "text", max: 16 << 10})
	if bad != nil {
		return *bad
	}
	m := state.Memory{ID: t.env.NewID(), Kind: v[0], Text: v[1], CreatedAt: state.Time{Time: t.env.Now().UTC()}}
	b.Mind.Memories = append(b.Mind.Memories, m)
	if over := len(b.Mind.Memories) - MaxMemories; over > 0 {
		b.Mind.Memories = slices.Delete(b.Mind.Memories, 0, over)
	}
	return succeed(struct {
		MemoryID string `json:"memory_id"`
	}{m.ID})
}

func recall(b *state.Being, args json.RawMessage) outcome.Outcome {
	v, bad := parseArgs(args, field{key: "query", max: 1024})
	if bad != nil {
		return *bad
	}
	q := strings.ToLower(v[0])
	found := []state.Memory{}
	for i := len(b.Mind.Memories) - 1; i >= 0 && len(found) < RecallLimit; i-- {
		m := b.Mind.Memories[i]
		if strings.Contains(strings.ToLower(m.Kind), q) || strings.Contains(strings.ToLower(m.Text), q) {
			found = append(found, m)
		}
	}
	return succeed(struct {
		Memories []state.Memory `json:"memories"`
	}{found})
}

func setPrompt(b *state.Being, args json.RawMessage) outcome.Outcome {
	v, bad := parseArgs(args, field{key: "prompt", max: 64 << 10})
	if bad != nil {
		return *bad
	}
	b.Mind.SystemPrompt = v[0]
	return succeed(struct {
		Updated bool `json:"updated"`
	}{true})
}

func addRule(b *state.Being, args json.RawMessage) outcome.Outcome {
	v, bad := parseArgs(args, field{key: "rule", max: 4 << 10})
	if bad != nil {
		return *bad
	}
	b.Mind.Rules = append(b.Mind.Rules, v[0])
	return succeed(struct {
		Rule string `json:"rule"`
	}{v[0]})
}

func addLearning(b *state.Being, args json.RawMessage) outcome.Outcome {
	v, bad := parseArgs(args, field{key: "learning", max: 8 << 10})
	if bad != nil {
		return *bad
	}
	b.Mind.Learnings = append(b.Mind.Learnings, v[0])
	return succeed(struct {
		Learning string `json:"learning"`
	}{v[0]})
}

// IsSelector reports whether model is a Brama selector rather than a model
// id: "any", "any-vision-capable", "best", or a "task:" prefix.
func IsSelector(model string) bool {
	switch model {
	case "any", "any-vision-capable", "best":
		return true
	}
	return strings.HasPrefix(model, "task:")
}

// switchModel accepts a selector or a model Brama lists now. A listing
// that fails counts as not advertised: the model cannot be confirmed.
func (t *Tools) switchModel(ctx context.Context, b *state.Being, args json.RawMessage) outcome.Outcome {
	v, bad := parseArgs(args, field{key: "model", max: 256})
	if bad != nil {
		return *bad
	}
	model := v[0]
	if !IsSelector(model) {
		var models []string
		var err error
		if t.env.Models != nil {
			models, err = t.env.Models(ctx)
		}
		if t.env.Models == nil || err != nil || !slices.Contains(models, model) {
			return outcome.Failure(CodeModelUnavailable, "Brama does not advertise that model")
		}
	}
	b.Mind.CurrentModel = model
	return succeed(struct {
		Model string `json:"model"`
	}{model})
}

func (t *Tools) spawnChild(ctx context.Context, b *state.Being, args json.RawMessage) outcome.Outcome {
	v, bad := parseArgs(args, field{key: "name", max: 128}, field{key: "ticker", max: 32}, field{key: "specialty", max: 256})
	if bad != nil {
		return *bad
	}
	if t.env.Spawn == nil {
		return outcome.Failure(CodeChildSpawn, "child being could not be started")
	}
	req := ChildRequest{ID: t.env.NewID(), Name: v[0], Ticker: v[1], Specialty: v[2]}
	started, err := t.env.Spawn(ctx, req)
	switch {
	case errors.Is(err, ErrChildState):
		return outcome.Failure(CodeChildState, "child state directory could not be created")
	case err != nil:
		return outcome.Failure(CodeChildSpawn, "child being could not be started")
	}
	status := started.Status
	if status == "" {
		status = state.StatusRunning
	}
	b.Mind.Children = append(b.Mind.Children, state.Child{
		ID: req.ID, Name: req.Name, Ticker: req.Ticker, StateDir: started.StateDir,
		CreatedAt: state.Time{Time: t.env.Now().UTC()}, Status: status,
	})
	return succeed(struct {
		ChildID string `json:"child_id"`
		Actor   string `json:"actor"`
	}{req.ID, started.Actor})
}
