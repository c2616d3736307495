package being

import (
	"log/slog"
	"time"

	"github.com/wisent/singularity/internal/prompt"
	"github.com/wisent/singularity/internal/tiers"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/las"
	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/budget"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/tools/most"
	"github.com/wisent/singularity/supervision"
)

// Mode says how a being lives.
type Mode int

const (
	// Run repeats cycles while solvent until asked to stop
	// (docs/cycle.md#run-loop-errors-and-shutdown).
	Run Mode = iota
	// Once runs exactly one cycle, reports it to the parent and waits to be
	// stopped; beings it spawns are created but not started
	// (docs/family.md#children-and-once).
	Once
	// Dormant loads the being for the tree but never cycles: exhausted or
	// failed children brought back by `run --resume`.
	Dormant
)

// Options configure one being actor. A child's options are its parent's with
// StateDir, Stimulus and Mode changed (docs/family.md#spawning); everything
// else is inherited. Zero durations take the documented defaults.
type Options struct {
	// StateDir is the being's own state directory. Unless Fresh is set
	// it must already hold a state.json (a child's is written by its
	// parent's spawn tool); the actor loads it on every start, which is
	// what makes a restart resume from the saved state.
	StateDir string
	// Identity is the immutable identity of the root, from configuration.
	// A child inherits it with its own persona (name, ticker, specialty).
	Identity state.Identity

	Mode Mode
	// Model is the configured Brama model a fresh being starts with.
	Model           string
	Pricing         budget.Pricing
	StartingBalance money.Amount // a child's starting budget
	Workspace       string
	MaxToolRounds   int
	ContextMessages int
	// PromptLayout lays the mind out in the prompt
	// (SINGULARITY_PROMPT_LAYOUT, docs/cycle.md#prompt-layouts); empty
	// means prompt.LayoutSeed.
	PromptLayout  prompt.Layout
	CycleInterval time.Duration
	// Tiers are SINGULARITY_TIERS_FILE's survival tiers
	// (docs/money.md#survival-tiers); nil means none.
	Tiers    tiers.Table
	Stimulus string // cycle 1 only; never inherited
	// MaxCycles, when positive, makes a running being idle once its cycle
	// counter reaches it (the demo's --cycles); it still answers and stops
	// when asked.
	MaxCycles uint64

	// MaxTokens is the max_tokens of a completion the balance pays for
	// in full (BRAMA_MAX_TOKENS); zero means 2048.
	MaxTokens int
	// MinCompletionTokens is the smallest max_tokens worth a call
	// (SINGULARITY_MIN_COMPLETION_TOKENS); zero means 256.
	MinCompletionTokens int
	// HTTPTimeout is the gateway's HTTP timeout, the instance-time part
	// of a reservation; zero means 120 s.
	HTTPTimeout time.Duration
	// Prices are BRAMA_PRICES_FILE's per-model prices over the shipped
	// catalogue, which the reservation of a completion assumes for the
	// current model; the zero Book means Pricing alone.
	Prices prices.Book
	// RequirePrice refuses self_switch_model to a model that would be
	// charged nothing (docs/money.md#no-free-model-by-accident): a bearer
	// gateway without SINGULARITY_ALLOW_FREE_MODEL.
	RequirePrice bool
	// Funding is where spawned children's money comes from
	// (SINGULARITY_CHILD_FUNDING).
	Funding builtin.Funding
	// FamilyTools gives the being the family tools, message_send and
	// self_sleep (SINGULARITY_FAMILY_TOOLS, docs/tools.md#family-tools);
	// inherited by children.
	FamilyTools bool
	// SpendLimiter is the family's spend limiter; nil when no spend
	// limit is set. SpendLimit is this being's own limit per rolling
	// hour (nil for none); both are inherited by children.
	SpendLimiter *actor.PID
	SpendLimit   *money.Amount

	// ModelTimeout bounds the wait for one completion (the HTTP timeout
	// plus a margin); past it the call is indeterminate.
	ModelTimeout time.Duration
	// MCPTimeout is the per-call Las deadline.
	MCPTimeout time.Duration
	// ShutdownGrace is how long a model call in flight may finish after a
	// stop was asked before it is abandoned.
	ShutdownGrace time.Duration

	// Gateway is the family's brama actor.
	Gateway *actor.PID
	// Las configures this being's Las actor; nil runs with built-in tools
	// only (used by scale benchmarks).
	Las *las.Options
	// Most serves the three Most tools; nil when they are disabled.
	Most *most.Client
	// Secrets are the secret values the runtime holds; the output
	// boundary replaces each by "[redacted]" in every tool result
	// (docs/tools.md#the-output-boundary), and the durable engine in
	// every journaled event and checkpoint, whatever wrote it
	// (docs/configuration.md#secret-files). Nil redacts nothing.
	Secrets *boundary.Secrets

	// Fresh, when set, is a being the boot gates created but did not
	// write (state.Check): the actor writes it as StateDir's first
	// state.json once its Las is ready, so a refused boot leaves nothing
	// behind. Nil means StateDir already holds the state. Never
	// inherited.
	Fresh *state.Being
	// Placement is where the being runs (Placement); nil is Alone.
	// Inherited by children.
	Placement Placement
	// Writers is the family's pool for durable writes; nil runs each
	// write on a goroutine of its own.
	Writers *state.Writers
	// CheckpointEvents is SINGULARITY_CHECKPOINT_EVENTS: a checkpoint is
	// written when more events than this lie past the last one; zero
	// means 256.
	CheckpointEvents int
	// SegmentBytes is the journal size past which a checkpoint starts a
	// new segment; zero means 64 MiB.
	SegmentBytes int64

	// FaultInjection lets messages.InjectPanic crash the actor (tests).
	FaultInjection bool
	// StorageFault, when set (tests), is asked before every durable
	// write and fails it with the error it returns (state.Fault).
	StorageFault state.Fault
	// Clock is the being's one time source: the instants its journal
	// records, how long a tool call took, the deadline of a tool call,
	// storage retries, the wait between cycles and the backoff of
	// failing cycles. Nil means the wall clock (supervision.WallClock).
	Clock supervision.Clock

	Logger *slog.Logger
	// Observer hears of every durable step, cycle end, Las restart and
	// durable write (the metrics and the narrative log); nil means none.
	// Inherited by children.
	Observer observe.Observer

	// inline runs durable writes and writer jobs on the caller's
	// goroutine, their outcome handled at once: tests that drive the
	// handlers one by one set it.
	inline bool
}

func (o Options) now() state.Time { return state.Time{Time: o.clock().UTC()} }

// clock is the options' Clock's instant.
func (o Options) clock() time.Time {
	if o.Clock != nil {
		return o.Clock.Now()
	}
	return time.Now()
}

// clockAfter runs f after d on the options' Clock.
func (o Options) clockAfter(d time.Duration, f func()) func() bool {
	if o.Clock != nil {
		return o.Clock.AfterFunc(d, f)
	}
	return time.AfterFunc(d, f).Stop
}

// Child is the options of this being's child living in dir, named as
// its state says: what a member of a family spread over members
// activates a child with (docs/cluster.md#placement).
func (o Options) Child(dir, name, ticker, specialty string) Options {
	return o.child(dir, name, ticker, specialty)
}

// child derives the options of a spawned child living in dir.
func (o Options) child(dir, name, ticker, specialty string) Options {
	c := o
	c.StateDir = dir
	c.Stimulus = ""
	c.Fresh = nil
	c.Identity.Name = name
	c.Identity.Ticker = ticker
	c.Identity.Specialty = specialty
	if o.Las != nil {
		l := *o.Las
		c.Las = &l
	}
	return c
}
