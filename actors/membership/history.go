package membership

import (
	"context"
	"log/slog"
	"time"

	"github.com/wisent/singularity/internal/fence"
)

// keepHistoryShort compacts etcd's history every period while this
// member runs beings (docs/cluster.md#etcds-history), each time up to
// what it saw a period before; it returns the function that stops it.
// A period of 0 never compacts. A compaction that fails is logged and
// tried again at the next period.
func keepHistoryShort(session *fence.Session, every time.Duration, log *slog.Logger) (stop func()) {
	if every <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		history := fence.NewHistory(session)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			tctx, tcancel := context.WithTimeout(ctx, min(every, time.Minute))
			rev, err := history.Tick(tctx)
			tcancel()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				log.Warn("etcd's history was not compacted", "err", err)
			case rev > 0:
				log.Debug("etcd's history compacted", "revision", rev)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
