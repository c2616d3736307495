package supervision

import (
	"errors"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/supervision/fault"
)

// Transient failures of a Las session (docs/las.md#supervision). The Las
// actor panics with a fault.ClassMCP/fault.Transient error wrapping one of
// these; the Las decider restarts on them.
var (
	ErrLasExited       = errors.New("Las process exited")
	ErrLasStdoutClosed = errors.New("Las stdout closed")
	ErrLasStdinWrite   = errors.New("write to Las stdin failed")
	ErrLasUnresponsive = errors.New("Las stopped answering")
	ErrLasLineTooLong  = errors.New("Las sent an oversized line")
	ErrLasSurface      = errors.New("required Las surface unavailable")
)

// ReasonIntensityExceeded is the LasUnavailable reason when the Las actor
// was restarted too often; the being journals "Las unavailable: restart
// intensity exceeded".
const ReasonIntensityExceeded = "restart intensity exceeded"

// LasChildName is the actor name of a being's Las child.
const LasChildName = "las"

// LasConfig tunes the Las policy. Zero fields take the defaults of
// docs/las.md#restart-backoff-and-intensity: backoff 100 ms doubling to
// 10 s with 20% jitter, 5 restarts within 60 s, the wall clock, the child
// named "las".
type LasConfig struct {
	Backoff   Backoff
	Intensity Intensity
	// Clock and Random replace time and jitter in tests; nil means real.
	Clock  Clock
	Random func() float64
	// ChildName is the Las actor's name under its parent; "" means "las".
	ChildName string
	// Notify, when set, hears every decision (for logs and tests).
	Notify func(system *actor.ActorSystem, ev Event)
}

// LasDecider restarts Las on transient (and indeterminate) failures and
// on unexpected panics, and stops it on permanent ones: a protocol
// version mismatch, a required surface missing at boot, a spawn error.
func LasDecider(reason any) actor.Directive {
	err, ok := reason.(error)
	if !ok {
		return actor.RestartDirective // a bug, not a Las verdict: a fresh incarnation is the cure
	}
	for _, transient := range []error{ErrLasExited, ErrLasStdoutClosed, ErrLasStdinWrite, ErrLasUnresponsive, ErrLasLineTooLong} {
		if errors.Is(err, transient) {
			return actor.RestartDirective
		}
	}
	if fault.KindOf(err) == fault.Permanent {
		return actor.StopDirective
	}
	return actor.RestartDirective
}

// LasPolicy is the supervision policy of a being's Las actor. When it
// gives up (a permanent failure, or the intensity exceeded) it stops the
// Las actor; the actor then tells its parent with messages.LasUnavailable
// from its stopping handler (this package names no message types: it
// does not import messages).
func LasPolicy(cfg LasConfig) Policy {
	return Policy{
		Name:      "las",
		Decider:   LasDecider,
		Backoff:   cfg.Backoff,
		Intensity: cfg.Intensity,
		Notify:    cfg.Notify,
	}
}

// LasRoute routes the failures of the Las child to LasPolicy, for parents
// that supervise other kinds of children too.
func LasRoute(cfg LasConfig) Route {
	name := cfg.ChildName
	if name == "" {
		name = LasChildName
	}
	return Route{Match: ChildNamed(name), Policy: LasPolicy(cfg)}
}

// ForLas is the supervisor strategy of a parent whose only supervised
// child is Las. A parent with child beings too builds its strategy with
// NewStrategy([]Route{LasRoute(cfg), …}).
func ForLas(cfg LasConfig) *Strategy {
	return NewStrategy([]Route{LasRoute(cfg)}, cfg.options()...)
}

func (cfg LasConfig) options() []Option {
	var opts []Option
	if cfg.Clock != nil {
		opts = append(opts, WithClock(cfg.Clock))
	}
	if cfg.Random != nil {
		opts = append(opts, WithRandom(cfg.Random))
	}
	return opts
}
