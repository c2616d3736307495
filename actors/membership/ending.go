package membership

import (
	"context"
	"log/slog"
	"time"

	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
)

// ending is how a membership ends.
type ending struct {
	// rejoin: join anew once etcd answers; the root's lock is not let
	// go (it goes with the lease).
	rejoin bool
	// err is the outcome, nil to exit 0.
	err error
	// stopFamily stops the family actor at once, before anything else.
	stopFamily bool
	// summarize writes the member's end summary: the whole family's,
	// root its last word, or a spread share's dirs.
	summarize bool
	dirs      []string
	root      *messages.FamilyStopped
	// endFamily, when set, is the root's status recorded as the
	// family's end.
	endFamily string
}

// finish ends the membership: on a worker, the family stops and closes,
// the summary is written, the family's end recorded, the root's lock
// let go, the member's record deleted and its session closed, in that
// order. Then the membership rejoins or reports its outcome.
func (m *Membership) finish(e ending) {
	m.enter(Stopping)
	m.stopTimers()
	if m.stopLost != nil {
		close(m.stopLost)
		m.stopLost = nil
	}
	if m.cancelWait != nil {
		m.cancelWait()
		m.cancelWait = nil
	}
	fams, spread, lease, log := m.cfg.Families, m.cfg.Spread, m.cfg.Lease, m.log
	s, mem, lifeline := m.session, m.member, m.lifeline
	fam, pl, hold, batch, lim, history := m.fam, m.placer, m.hold, m.batch, m.limiter, m.stopHistory
	lock := m.lock
	if m.lockHanded || e.rejoin {
		lock = nil
	}
	m.member, m.lifeline, m.fam, m.placer, m.hold, m.batch, m.limiter, m.stopHistory = nil, nil, nil, nil, nil, nil, nil, nil
	m.lock, m.lockHanded, m.signals, m.pending, m.asked = nil, false, 0, 0, false
	m.log = m.cfg.Logger
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.call(0, func(context.Context) any {
		err := e.err
		if fam != nil {
			if e.stopFamily {
				fam.System.Root.Stop(fam.PID)
			}
			if pl != nil {
				// The placer's watch and its holds' watchers end with
				// it, before the family's actor system shuts down
				// (within the future's 10 s).
				_ = fam.System.Root.StopFuture(pl).Wait()
			}
			fam.Close()
		}
		if e.summarize {
			fams.Summarize(!spread, e.dirs, e.root)
		}
		if e.endFamily != "" {
			ctx, cancel := context.WithTimeout(context.Background(), lease)
			if endErr := hold.End(ctx, e.endFamily); endErr != nil {
				err = fault.Errorf(fault.ClassCluster, "%w", endErr)
			} else {
				log.Info("the family has ended: its root is exhausted")
			}
			cancel()
		}
		if lock != nil {
			unlock(lock, lease, log)
		}
		if history != nil {
			history()
		}
		if batch != nil {
			batch.Close()
		}
		if lim != nil {
			lim.drop()
		}
		if mem != nil {
			fams.StandBy(nil)
			lifeline()
			// The record goes at once (the lease would in time).
			ctx, cancel := context.WithTimeout(context.Background(), lease)
			_ = mem.Leave(ctx)
			cancel()
		}
		_ = s.Close() // the lease revoked: every lock let go
		return finished{rejoin: e.rejoin, err: err}
	})
}

func (m *Membership) handleFinished(msg finished) {
	m.inFlight = false
	if msg.rejoin {
		m.reopen()
		return
	}
	m.end(msg.err)
}

// unlock lets a lock go; one that etcd does not let go goes with the
// member's lease.
func unlock(l *fence.Lock, lease time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), lease)
	defer cancel()
	if err := l.Unlock(ctx); err != nil {
		log.Warn("a being's lock could not be let go; it goes with the lease", "being", l.Being(), "err", err)
	}
}
