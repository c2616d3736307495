package fence

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// History keeps etcd's history short (docs/cluster.md#etcds-history).
// Every fenced step writes a commit record, and etcd keeps each old
// value until its history is compacted, so a family running for days
// would fill etcd's space quota, after which every commit fails. The
// holder calls Tick on a clock; each tick discards the revisions older
// than the one the tick before saw, so at least one period of history
// is always kept, for a standby's watch of the lock to start from.
type History struct {
	s    *Session
	seen int64 // the revision the last tick saw
}

// NewHistory returns the history keeper of session s's etcd.
func NewHistory(s *Session) *History { return &History{s: s} }

// Tick compacts etcd's history to the revision the previous tick saw
// (nothing at the first tick), then notes the current one. It returns
// the revision compacted to, 0 for none. A history already compacted
// further, by another member or by etcd's own auto-compaction, is no
// error.
func (h *History) Tick(ctx context.Context) (int64, error) {
	compacted := int64(0)
	if h.seen > 0 {
		_, err := h.s.client.Compact(ctx, h.seen)
		switch {
		case err == nil:
			compacted = h.seen
		case errors.Is(err, rpctypes.ErrCompacted):
		default:
			return 0, fmt.Errorf("cannot compact etcd's history to revision %d: %w", h.seen, err)
		}
	}
	resp, err := h.s.client.Get(ctx, h.s.keys.prefix, clientv3.WithCountOnly())
	if err != nil {
		return compacted, fmt.Errorf("cannot read etcd's revision: %w", err)
	}
	h.seen = resp.Header.Revision
	return compacted, nil
}
