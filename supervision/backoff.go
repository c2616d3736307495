package supervision

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is a capped exponential delay with proportional jitter: the
// n-th consecutive restart (n from 0) waits Initial·Multiplier^n, capped
// at Max, then spread uniformly over ±Jitter of itself (and capped again),
// so restarting siblings do not fall into step. Zero fields take the
// defaults of docs/las.md#restart-backoff-and-intensity.
type Backoff struct {
	// Initial is the first delay; zero means 100 ms.
	Initial time.Duration
	// Max caps every delay; zero means 10 s.
	Max time.Duration
	// Multiplier grows the delay per attempt; zero means 2.
	Multiplier float64
	// Jitter is the spread as a fraction of the delay, in [0, 1); zero
	// means 0.2, negative means none.
	Jitter float64
}

// Defaults of docs/las.md#restart-backoff-and-intensity.
const (
	DefaultBackoffInitial = 100 * time.Millisecond
	DefaultBackoffMax     = 10 * time.Second
)

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = DefaultBackoffInitial
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoffMax
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	if b.Multiplier < 1 {
		b.Multiplier = 2
	}
	switch {
	case b.Jitter == 0:
		b.Jitter = 0.2
	case b.Jitter < 0:
		b.Jitter = 0
	case b.Jitter >= 1:
		b.Jitter = 0.99
	}
	return b
}

// Delay returns the wait before restart number attempt (0 for the first
// after a quiet period). r is a uniform sample in [0, 1) that places the
// delay inside its jitter band: 0 gives the shortest, 0.5 the nominal.
func (b Backoff) Delay(attempt int, r float64) time.Duration {
	b = b.withDefaults()
	if attempt < 0 {
		attempt = 0
	}
	nominal := float64(b.Initial) * math.Pow(b.Multiplier, float64(attempt))
	if nominal > float64(b.Max) || math.IsInf(nominal, 0) {
		nominal = float64(b.Max)
	}
	d := nominal * (1 - b.Jitter + 2*b.Jitter*r)
	if d > float64(b.Max) {
		d = float64(b.Max)
	}
	return time.Duration(d)
}

// uniform is the default jitter source.
func uniform() float64 { return rand.Float64() }
