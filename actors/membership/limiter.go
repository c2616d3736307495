package membership

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/limits"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/placement"
	"github.com/wisent/singularity/internal/store/money"
)

// limiterLock is the lock of the family's one spend limiter
// (docs/cluster.md#beings-spread-over-members), taken like a being's.
const limiterLock = "limiter"

// limiter runs the family's one spend limiter on this member, on the
// member's own actor system, while it holds the limiter's lock. take
// runs after every look of the placer, on the look's worker: one at a
// time; drop at the membership's end, on its worker.
type limiter struct {
	session *fence.Session
	system  *actor.ActorSystem
	limit   *money.Amount
	lease   time.Duration
	log     *slog.Logger

	mu   sync.Mutex
	pid  *actor.PID
	lock *fence.Lock
}

// take runs the family's limiter here when no member holds its lock.
// Its window starts empty, as a family's that restarts does.
func (lim *limiter) take(pl placement.Placement) {
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if lim.lock != nil || pl.Locked[limiterLock] {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lim.lease)
	lock, err := lim.session.TryLock(ctx, limiterLock)
	cancel()
	if err != nil {
		return
	}
	pid, err := lim.system.Root.SpawnNamed(limits.Props(lim.limit, nil), limits.Name)
	if err != nil {
		lim.log.Warn("the family's spend limiter cannot be started here", "err", err)
		unlock(lock, lim.lease, lim.log)
		return
	}
	lim.pid, lim.lock = pid, lock
	lim.log.Info("this member runs the family's spend limiter", "token", lock.Token())
}

// drop stops the limiter this member runs and lets its lock go.
func (lim *limiter) drop() {
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if lim.pid == nil {
		return
	}
	_ = lim.system.Root.StopFuture(lim.pid).Wait()
	unlock(lim.lock, lim.lease, lim.log)
	lim.pid, lim.lock = nil, nil
}

// limiterLocator finds the member that runs the family's limiter,
// asking etcd at most once a second.
func limiterLocator(session *fence.Session) limits.Locate {
	var (
		mu      sync.Mutex
		address string
		at      time.Time
	)
	return func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if address != "" && time.Since(at) < time.Second {
			return address, nil
		}
		info, ok, err := member.Holder(ctx, session, limiterLock)
		switch {
		case err != nil:
			return "", err
		case !ok:
			return "", errors.New("no member runs the family's spend limiter now")
		}
		address, at = info.Address, time.Now()
		return address, nil
	}
}
