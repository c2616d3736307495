package member

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/internal/fence"
)

// Lifeline is a standby's watch on the process of the member holding a
// being's lock (docs/cluster.md#failure). A member whose process dies
// keeps its lock until etcd ends its lease, up to the whole lease after
// the death; but when the process dies and its machine lives on, the
// kernel closes the process's connections and its listening address
// refuses new ones at once. A standby that holds a connection to the
// holder's address (the member record's, where protoactor's remote
// listens) sees it close, dials again, and when that dial is refused
// ends the holder's lease itself: the lock goes to the standby that has
// waited longest, well within the lease.
//
// Ending a lease is always safe: every step of the holder is fenced by
// its lock, and a holder that was alive after all has its next step
// refused, stops its family and joins again, as after a lost lease.
// What the lifeline guards against is needless takeovers, so it ends a
// lease only on the evidence of a death: a connection to that holder
// that was open and closed, and a dial to the same address refused.
// A holder that was never reached (an address blocked from here, a
// firewall that rejects) is left to its lease, and so is one whose
// address stops answering without refusing: a frozen process, a machine
// that died or a network that parted.
type Lifeline struct {
	// Session is the standby's own; it reads the lock and the member
	// records, and ends the holder's lease.
	Session *fence.Session
	// Family and Being name the lock watched.
	Family, Being string
	// Self is the standby's own lease (Info.Lease): it never watches
	// itself.
	Self string
	// Every is the pause between looks while no holder is reached; it
	// bounds each dial too.
	Every time.Duration
	Log   *slog.Logger
	// Seen, when set, is told each thing the lifeline learns, in order
	// (tests).
	Seen func(Sight)
}

// Sight is one thing a lifeline learned about the holder Member.
type Sight struct {
	Member string
	What   Seen
}

// Seen is what a lifeline learned.
type Seen int

const (
	// Reached: a connection to the holder's address is open.
	Reached Seen = iota
	// Alive: the connection closed, and a new one was accepted.
	Alive
	// Unreached: a dial failed before any connection to this holder was
	// open, or after one closed without a refusal: nothing is judged.
	Unreached
	// LeaseEnded: the connection closed and the address refused: the
	// holder's lease was ended.
	LeaseEnded
)

// Run watches until ctx ends.
func (l *Lifeline) Run(ctx context.Context) {
	for ctx.Err() == nil {
		h, ok, err := Holder(ctx, l.Session.Client(), l.Family, l.Being)
		if err == nil && ok && h.Lease != l.Self && h.Address != "" {
			l.follow(ctx, h)
		}
		select {
		case <-ctx.Done():
		case <-time.After(l.Every):
		}
	}
}

// follow holds a connection to holder h's address for as long as it is
// accepted and h holds the lock, and ends h's lease once its address
// refuses a dial after a connection was open.
func (l *Lifeline) follow(ctx context.Context, h Info) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go l.untilMoved(ctx, h, cancel)
	conn, err := l.dial(ctx, h.Address)
	if err != nil {
		l.see(h, Unreached)
		return
	}
	l.see(h, Reached)
	for {
		closed(ctx, conn)
		if ctx.Err() != nil {
			return
		}
		conn, err = l.dial(ctx, h.Address)
		switch {
		case err == nil:
			l.see(h, Alive)
		case errors.Is(err, syscall.ECONNREFUSED) && ctx.Err() == nil:
			l.end(ctx, h)
			return
		default:
			l.see(h, Unreached)
			return
		}
	}
}

// untilMoved calls moved once the lock is no longer h's (a handover, or
// a lease that ended by itself): the lifeline then follows the new
// holder.
func (l *Lifeline) untilMoved(ctx context.Context, h Info, moved func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(l.Every):
		}
		now, ok, err := Holder(ctx, l.Session.Client(), l.Family, l.Being)
		if err == nil && (!ok || now.Lease != h.Lease) {
			moved()
			return
		}
	}
}

func (l *Lifeline) dial(ctx context.Context, address string) (net.Conn, error) {
	d := net.Dialer{Timeout: l.Every}
	return d.DialContext(ctx, "tcp", address)
}

// closed reads conn until it closes (or ctx ends), then closes it.
// Whatever the peer writes is of no interest.
func closed(ctx context.Context, conn net.Conn) {
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	_, _ = io.Copy(io.Discard, conn)
	_ = conn.Close()
}

// end ends h's lease, if h still holds the lock: its process is gone.
func (l *Lifeline) end(ctx context.Context, h Info) {
	now, ok, err := Holder(ctx, l.Session.Client(), l.Family, l.Being)
	if err != nil || !ok || now.Lease != h.Lease {
		l.see(h, Unreached) // the lock moved on meanwhile
		return
	}
	id, err := strconv.ParseInt(h.Lease, 16, 64)
	if err != nil {
		return
	}
	_, err = l.Session.Client().Revoke(ctx, clientv3.LeaseID(id))
	if err != nil {
		// Another standby ended it first, or etcd did.
		l.Log.Info("the holder's lease could not be ended", "holder", h.Name, "err", err)
	} else {
		l.Log.Warn("the holder's process is gone (its address refuses connections): its lease is ended", "holder", h.Name, "address", h.Address)
	}
	l.see(h, LeaseEnded)
}

func (l *Lifeline) see(h Info, what Seen) {
	if l.Seen != nil {
		l.Seen(Sight{Member: h.Name, What: what})
	}
}
