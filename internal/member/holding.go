package member

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/placement"
	"github.com/wisent/singularity/internal/store/state"
)

// RootBeing is the id of a family's root being in etcd (its lock and
// commit record); every other being is known by the name of its
// directory, children/<uuid>.
const RootBeing = placement.RootBeing

// Holding is a member's hold under one lock (docs/cluster.md#placement):
// it loads each being it is asked for as that lock's holder, and fences
// the being's steps by the lock, each being committing its own record. A
// member that holds the family as one unit has one Holding, under the
// root being's lock, for every being of the family; a member of a family
// spread over members has one for each being it runs, under that being's
// own lock. A refused step of any being it loaded loses the whole hold
// (Lost). It is a being's being.Placement.
type Holding struct {
	root    string
	lock    *fence.Lock
	session *fence.Session
	batch   *fence.Batcher
	// timeout bounds reading a commit record.
	timeout time.Duration
	// spread: a being of a family spread over members, under its own
	// lock; its children are left to the members.
	spread bool

	lost chan struct{}
	mu   sync.Mutex
	err  error
	// loaded are the directories loaded under this hold: a second load
	// is a restart.
	loaded map[string]bool
}

// recovering bounds how many beings of the process read their holders'
// files at once (see Hold), whichever hold they load under.
var recovering = make(chan struct{}, runtime.GOMAXPROCS(0))

// NewHolding returns a hold under lock on session, in the family whose
// root being lives in root (which names every being's id, BeingID): the
// root being's lock for the family as one unit, a being's own when the
// family is spread over members. Commits go through batch (nil: a
// transaction each).
func NewHolding(session *fence.Session, lock *fence.Lock, batch *fence.Batcher, root string, timeout time.Duration) *Holding {
	return &Holding{root: filepath.Clean(root), lock: lock, session: session, batch: batch, timeout: timeout, lost: make(chan struct{}), loaded: map[string]bool{}}
}

// NewSpreadHolding is NewHolding for one being of a family spread over
// its members, under that being's own lock: its children are activated
// by whichever member takes their locks (ChildrenElsewhere).
func NewSpreadHolding(session *fence.Session, lock *fence.Lock, batch *fence.Batcher, root string, timeout time.Duration) *Holding {
	h := NewHolding(session, lock, batch, root, timeout)
	h.spread = true
	return h
}

// ChildrenElsewhere says whether the held beings' children run on
// whichever member holds them (a spread family), not under this hold.
func (h *Holding) ChildrenElsewhere() bool { return h.spread }

// BeingID is the id in etcd of the being whose directory is dir, in the
// family whose root lives in root.
func BeingID(root, dir string) string {
	if filepath.Clean(dir) == filepath.Clean(root) {
		return RootBeing
	}
	return filepath.Base(dir)
}

// Hold reads the commit record of the being in dir and loads it as the
// lock's holder (fence.Recover, which writes nothing). The fence it
// returns commits that being's record under the hold's lock.
//
// A being loads once a hold. A second load is the being's restart by its
// supervisor: its own directory under this token is no longer new, and a
// step it had in flight may still be committing, so the hold is lost
// instead (Lost), and what the hold held is loaded anew under a new
// token.
func (h *Holding) Hold(dir string) (*durable.Held, durable.Fence, error) {
	id := BeingID(h.root, dir)
	h.mu.Lock()
	again := h.loaded[filepath.Clean(dir)]
	h.loaded[filepath.Clean(dir)] = true
	h.mu.Unlock()
	if again {
		err := fmt.Errorf("being %s restarted under token %d: the family is to be held anew", id, h.lock.Token())
		h.lose(err)
		return nil, nil, err
	}
	cover, err := h.lock.Cover(id)
	if err != nil {
		return nil, nil, fmt.Errorf("hold %s: %w", dir, err)
	}
	token, seq, err := h.committed(id)
	if err != nil {
		return nil, nil, fmt.Errorf("hold %s: %w", dir, err)
	}
	// A takeover loads every being of the family at once, and reading
	// a being's holders' files is work for a CPU: as many at a time as
	// the process has CPUs, the others blocked, so that the scheduler's
	// run queue stays short and the session's lease keepalives are
	// answered in time (with every being reading its whole life at once,
	// a new holder of 300 beings lost its 3 s lease before it had loaded
	// them).
	recovering <- struct{}{}
	held, err := fence.Recover(dir, h.lock.Token(), fence.Record{Token: token, Seq: seq})
	<-recovering
	if err != nil {
		return nil, nil, err
	}
	return &held, watched{committer: fence.NewCommitter(cover, h.batch), hold: h}, nil
}

// committed reads the commit record of being id. A try that runs out of
// its time is tried again, each time with twice as long (up to a
// minute), for as long as the hold and the member's session last: a
// takeover asks etcd for every being's record at once, and a slow etcd
// is no reason to leave a being out of the family (seen: one of 300
// left out after a 9 s wait). Any other error is final.
func (h *Holding) committed(id string) (token, seq uint64, err error) {
	for wait := max(h.timeout, time.Microsecond); ; wait = min(2*wait, time.Minute) {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		token, seq, err = h.session.Committed(ctx, id)
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil || !timedOut {
			return token, seq, err
		}
		select {
		case <-h.lost:
			return 0, 0, fmt.Errorf("%w; the hold is lost: %w", err, h.Err())
		case <-h.session.Done():
			return 0, 0, fmt.Errorf("%w; the member's etcd session ended", err)
		default:
		}
	}
}

// Committed is what the family counts of the being in dir as its commit
// record says now: its committed events past seq after, in order, and of
// them the newest n when n is not negative (fence.TrustedPast, which
// reads only what it returns and the holders' ends). It is what the
// holder's debug endpoint shows of a being's journal.
func (h *Holding) Committed(ctx context.Context, dir string, after uint64, n int) ([]state.Event, error) {
	return CommittedOf(h.session, h.root)(ctx, dir, after, n)
}

// CommittedOf is Holding.Committed for any member of the family on the
// shared root, holding it or standing by: what a standby's debug
// endpoint shows of a being's journal.
func CommittedOf(session *fence.Session, root string) func(ctx context.Context, dir string, after uint64, n int) ([]state.Event, error) {
	return func(ctx context.Context, dir string, after uint64, n int) ([]state.Event, error) {
		token, seq, err := session.Committed(ctx, BeingID(root, dir))
		if err != nil {
			return nil, err
		}
		events, _, err := fence.TrustedPast(dir, fence.Record{Token: token, Seq: seq}, after, n)
		return events, err
	}
}

// Token is the fencing token every being of the hold writes under.
func (h *Holding) Token() uint64 { return h.lock.Token() }

// Fresh writes the root's first state.json as the family's first holder
// (the directory has none): newBeing's being, written durably. Every later
// holder loads it through Hold. The write is exclusive: a first state
// that another holder wrote after this one looked (this one was frozen
// in between, and its lock is gone) is left as it is, and this holder
// goes on to have its first step fenced.
func Fresh(root string, id state.Identity, newBeing func() (*state.Being, error)) error {
	exists, err := state.Exists(root)
	if err != nil || exists {
		return err
	}
	_, _, _, err = state.Boot(root, false, id, newBeing)
	if errors.Is(err, state.ErrExists) {
		return nil
	}
	return err
}

// watched is a being's committer whose refusal ends the whole hold: a
// member whose hold is lost stops every being loaded under it (the whole
// family, or the one spread being) and lets the lock go, for itself or
// another member to take anew.
type watched struct {
	committer *fence.Committer
	hold      *Holding
}

func (w watched) Fence(last uint64) error { return w.refused(w.committer.Fence(last)) }

// FenceStep registers the children the step records with its commit
// (fence.Committer.FenceStep).
func (w watched) FenceStep(step []state.Event) error {
	return w.refused(w.committer.FenceStep(step))
}

func (w watched) refused(err error) error {
	if err != nil {
		w.hold.lose(err)
	}
	return err
}

// Lost is closed once a step of any being of the hold was refused
// (fenced, or its outcome unknown): the member must stop the family and
// let its next holder decide from the commit records.
func (h *Holding) Lost() <-chan struct{} { return h.lost }

// Err is the first refusal that lost the hold, nil while it holds.
func (h *Holding) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

func (h *Holding) lose(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
		close(h.lost)
	}
}

// End records that the family ended with the root's status, under the
// hold's lock: a holder that lost the lock cannot end the family.
func (h *Holding) End(ctx context.Context, status string) error {
	return h.lock.EndFamily(ctx, status)
}

// Records reads the commit records of family from etcd at endpoints
// without joining it (no lease, nothing written), by being id.
func Records(ctx context.Context, endpoints []string, family string) (map[string]fence.Record, error) {
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: fence.DefaultDialTimeout, Context: ctx, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("cannot reach etcd at %v: %w", endpoints, err)
	}
	defer client.Close()
	return fence.ReadRecords(ctx, client, family)
}

// Counter is how `singularity status` reads each being of a family
// across machines whose root lives in root: as fence.Counted says, by its
// commit record in records.
func Counter(root string, records map[string]fence.Record) func(dir string) (*state.Being, []state.Event, error) {
	return func(dir string) (*state.Being, []state.Event, error) {
		return fence.Counted(dir, records[BeingID(root, dir)])
	}
}
