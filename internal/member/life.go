package member

import (
	"errors"

	"github.com/wisent/singularity/internal/store/state"
)

// JoinStep is what a member does after one try to join its family.
type JoinStep int

const (
	// Joined: the member is in the family.
	Joined JoinStep = iota
	// JoinAgain: the name is still taken by this member's previous
	// lease (etcd away, then back); the member tries again shortly.
	JoinAgain
	// JoinRefused: the family refuses the member's configuration (its
	// name, root, family, protocol or placement); a configuration error.
	JoinRefused
	// JoinFailed: etcd did not answer the join; a cluster error.
	JoinFailed
)

// AfterJoin is the step after a join that returned err; late says the
// member has tried for longer than a previous lease of its own can
// last, so a name still taken is another member's.
func AfterJoin(err error, late bool) JoinStep {
	switch {
	case err == nil:
		return Joined
	case errors.Is(err, ErrNameTaken) && !late:
		return JoinAgain
	case errors.Is(err, ErrNameTaken), errors.Is(err, ErrAnotherRoot),
		errors.Is(err, ErrAnotherFamily), errors.Is(err, ErrProtocol),
		errors.Is(err, ErrPlacement):
		return JoinRefused
	default:
		return JoinFailed
	}
}

// Ask is what a member asks of the beings it runs when it stops.
type Ask int

const (
	// AskHandOver: the beings stop at their next round boundary,
	// children first, and are handed over (the whole family: its
	// shutdown; a spread share: the placer's Leave).
	AskHandOver Ask = iota + 1
	// AskStop: a spread share's beings stop at their next round
	// boundary without waiting for one another (the placer's Shutdown).
	AskStop
	// AskNow: the beings stop at once.
	AskNow
)

// SignalStep is a member's answer to one signal while it runs beings.
type SignalStep struct {
	Ask Ask
	// Hurry arms the stop deadline, past which the member asks AskNow
	// itself (Hurried).
	Hurry bool
	// GiveUp arms the last deadline, unless it is armed: past it the
	// member stops waiting for its beings and ends with an error.
	GiveUp bool
}

// OnSignal is the answer to the nth signal (from 1) of a member that
// holds the whole family, or a spread share when spread is set. The
// whole family is asked to hand over, then (second and later) to stop
// at once; a spread share to hand over, then to stop without waiting
// for one another, then (third and later) at once.
func OnSignal(spread bool, n int) SignalStep {
	switch {
	case n <= 1:
		return SignalStep{Ask: AskHandOver, Hurry: true}
	case spread && n == 2:
		return SignalStep{Ask: AskStop}
	default:
		return SignalStep{Ask: AskNow, GiveUp: true}
	}
}

// Hurried is the step at the stop deadline: the beings stop at once,
// and the last deadline is armed. A spread share's last deadline
// starts anew then (rearm); the whole family's keeps the one a second
// signal armed.
func Hurried(spread bool) (step SignalStep, rearm bool) {
	return SignalStep{Ask: AskNow, GiveUp: true}, spread
}

// Stopped is what a member does once the whole family it holds has
// stopped.
type Stopped struct {
	// Rejoin: a step was refused, so the family writes nothing more;
	// the member joins anew.
	Rejoin bool
	// Summarize: the member writes its end summary.
	Summarize bool
	// EndFamily: the root is exhausted; the member records the family's
	// end, and no member holds it again.
	EndFamily bool
	// Err is the member's error, nil to exit 0. The root's lock goes to
	// a standby in every case but Rejoin, which loses it with the lease.
	Err error
}

// AfterStop is the meaning of the whole family's stop with status and
// err: signalled when a signal asked for it (the family is handed
// over), refused when a step of it was refused meanwhile. A family
// that stopped of itself ended if its root is exhausted, and otherwise
// failed on this member, so a standby tries it.
func AfterStop(signalled bool, refused error, status string, err error) Stopped {
	switch {
	case signalled:
		s := Stopped{Summarize: refused == nil}
		if refused == nil && status == state.StatusFailed {
			s.Err = err
		}
		return s
	case refused != nil:
		return Stopped{Rejoin: true}
	case status == state.StatusExhausted:
		return Stopped{Summarize: true, EndFamily: true}
	default:
		return Stopped{Summarize: true, Err: err}
	}
}
