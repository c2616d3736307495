package member

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/wisent/singularity/internal/fence"
)

// Lifeline is a member's watch on the processes of the family's other
// members (docs/cluster.md#a-dead-members-lease). A member whose process
// dies keeps its lease, and with it the family's lock or its place in
// the lock's queue, until etcd ends the lease, up to the whole lease
// after the death. But when the process dies and its machine lives on,
// the kernel closes the process's connections and its address refuses
// new ones at once. So each member holds a connection to every other
// member's address (its member record's, where protoactor's remote
// listens); when one closes, it dials again, and when that dial is
// refused it ends that member's lease itself. A dead holder's lock then
// goes to the standby that has waited longest, and a dead standby leaves
// the queue, well within the lease.
//
// Ending a lease is always safe: every step of a holder is fenced by its
// lock, and a member that was alive after all has its next step refused
// (or its wait for the lock ended), stops and joins again, as after a
// lost lease. What the lifeline guards against is needless takeovers,
// so it ends a lease only on the evidence of a death: a connection to
// that member that was open and closed, and a dial to the same address
// refused. A member never reached (an address blocked from here, a
// firewall that rejects) is left to its lease, and so is one whose
// address stops answering without refusing: a frozen process, a machine
// that died or a network that parted.
type Lifeline struct {
	// Session is the member's own: it lists the members and ends a dead
	// member's lease.
	Session *fence.Session
	// Self is the member's own lease (Info.Lease): it never watches
	// itself.
	Self string
	// Every is the pause between two readings of the member records
	// (and before a member not reached is dialled again); it bounds
	// each dial too.
	Every time.Duration
	Log   *slog.Logger
	// Seen, when set, is told each thing the lifeline learns (tests);
	// it is called from several goroutines.
	Seen func(Sight)
}

// Sight is one thing a lifeline learned about member Member.
type Sight struct {
	Member string
	What   Seen
}

// Seen is what a lifeline learned about a member.
type Seen int

const (
	// Reached: a connection to the member's address is open.
	Reached Seen = iota
	// Alive: the connection closed, and a new one was accepted.
	Alive
	// Unreached: a dial failed before any connection to this member was
	// open, or after one closed without a refusal: nothing is judged.
	Unreached
	// LeaseEnded: the connection closed and the address refused: the
	// member's lease was ended.
	LeaseEnded
	// Left: the member's record is gone (it left, or its lease ended):
	// it is no longer watched.
	Left
)

// Run watches until ctx ends, following each member listed that is not
// followed yet, and leaving those whose record is gone. It lists the
// members every l.Every, and at once when a member record changes, so a
// member that joined is followed from its first moments.
func (l *Lifeline) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	changes := l.Session.WatchMembers(wctx)
	type follower struct {
		info Info
		stop context.CancelFunc
	}
	following := map[string]*follower{} // by lease
	ended := make(chan *follower)       // each follower, once it stops
	for {
		if members, err := l.members(ctx); err == nil {
			listed := map[string]bool{}
			for _, m := range members {
				listed[m.Lease] = true
				if following[m.Lease] != nil || m.Lease == l.Self || m.Address == "" {
					continue
				}
				fctx, stop := context.WithCancel(ctx)
				f := &follower{info: m, stop: stop}
				following[m.Lease] = f
				wg.Add(1)
				go func() {
					defer wg.Done()
					l.follow(fctx, m)
					select {
					case ended <- f:
					case <-ctx.Done():
					}
				}()
			}
			for lease, f := range following {
				if !listed[lease] {
					f.stop()
					delete(following, lease)
					l.see(f.info, Left)
				}
			}
		}
		next := time.After(l.Every)
	wait:
		for {
			select {
			case <-ctx.Done():
				for _, f := range following {
					f.stop()
				}
				return
			case f := <-ended:
				f.stop()
				if following[f.info.Lease] == f {
					delete(following, f.info.Lease)
				}
			case <-next:
				break wait
			case _, ok := <-changes:
				if !ok {
					changes = nil // the watch ended (etcd away): the timer alone
				}
				break wait
			}
		}
	}
}

// follow holds a connection to member m's address for as long as it is
// accepted, and ends m's lease once its address refuses a dial after a
// connection was open.
func (l *Lifeline) follow(ctx context.Context, m Info) {
	conn, err := l.dial(ctx, m.Address)
	if err != nil {
		if ctx.Err() == nil {
			l.see(m, Unreached)
		}
		return
	}
	l.see(m, Reached)
	for {
		closed(ctx, conn)
		if ctx.Err() != nil {
			return
		}
		conn, err = l.dial(ctx, m.Address)
		switch {
		case err == nil:
			l.see(m, Alive)
		case errors.Is(err, syscall.ECONNREFUSED) && ctx.Err() == nil:
			l.end(ctx, m)
			return
		default:
			if ctx.Err() == nil {
				l.see(m, Unreached)
			}
			return
		}
	}
}

// members lists the live members, within l.wait.
func (l *Lifeline) members(ctx context.Context) ([]Info, error) {
	ctx, cancel := context.WithTimeout(ctx, l.wait())
	defer cancel()
	return Live(ctx, l.Session)
}

// wait bounds each request to etcd: three pauses (the lease, as the
// member sets Every), and at least a second.
func (l *Lifeline) wait() time.Duration { return max(3*l.Every, time.Second) }

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

// end ends m's lease, if m's record still names it: its process is gone.
func (l *Lifeline) end(ctx context.Context, m Info) {
	members, err := l.members(ctx)
	if err != nil || !listed(members, m) {
		// Its record went meanwhile, or etcd did not say: the lease
		// decides.
		l.see(m, Unreached)
		return
	}
	id, err := strconv.ParseInt(m.Lease, 16, 64)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, l.wait())
	defer cancel()
	if err := l.Session.EndLease(ctx, id); err != nil {
		// Another member ended it first, or etcd did.
		l.Log.Info("a gone member's lease could not be ended", "gone", m.Name, "err", err)
	} else {
		l.Log.Warn("a member's process is gone (its address refuses connections): its lease is ended", "gone", m.Name, "address", m.Address)
	}
	l.see(m, LeaseEnded)
}

// listed says whether members holds m under the same lease.
func listed(members []Info, m Info) bool {
	for _, o := range members {
		if o.Name == m.Name && o.Lease == m.Lease {
			return true
		}
	}
	return false
}

func (l *Lifeline) see(m Info, what Seen) {
	if l.Seen != nil {
		l.Seen(Sight{Member: m.Name, What: what})
	}
}
