package placement

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Memory is a family's placement in memory, shared by the members that
// join it (Join): what etcd is to members of one family across machines.
// It serves the placer's tests and examples; it keeps the contract of
// placementtest. Its zero value is not usable; use NewMemory.
type Memory struct {
	mu         sync.Mutex
	revision   uint64
	members    map[string]*MemoryMember // by name
	locks      map[string]*memoryLock   // by being: its holder
	registered map[string]string
	ended      map[string]string
	stopping   map[string]bool
	familyEnd  string
	watchers   []chan struct{}
}

// NewMemory returns an empty family.
func NewMemory() *Memory {
	return &Memory{
		members:    map[string]*MemoryMember{},
		locks:      map[string]*memoryLock{},
		registered: map[string]string{},
		ended:      map[string]string{},
		stopping:   map[string]bool{},
	}
}

// Join adds a live member named name and returns its Store. A name that
// is a live member already is an error.
func (m *Memory) Join(name string) (*MemoryMember, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.members[name] != nil {
		return nil, fmt.Errorf("member %s is in the family already", name)
	}
	mm := &MemoryMember{family: m, name: name}
	m.members[name] = mm
	m.changed()
	return mm, nil
}

// Register records child as a child of parent, under parent's lock l,
// as a committed step recording the child does in etcd.
func (m *Memory) Register(l Lock, child string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.heldLocked(l) {
		return fmt.Errorf("registration of %s under %s: %w", child, l.Being(), ErrNotHeld)
	}
	m.registered[child] = l.Being()
	m.changed()
	return nil
}

// changed wakes every watcher; m.mu is held.
func (m *Memory) changed() {
	m.revision++
	for _, w := range m.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// heldLocked says whether l is its being's current lock; m.mu is held.
func (m *Memory) heldLocked(l Lock) bool {
	ml, ok := l.(*memoryLock)
	return ok && m.locks[ml.being] == ml && ml.owner.family == m
}

// MemoryMember is one member of a Memory family: its Store.
type MemoryMember struct {
	family  *Memory
	name    string
	leaving bool
	gone    bool
}

var _ Store = (*MemoryMember)(nil)

// Expire ends the member as a lost lease does: its locks are let go, and
// it is neither counted nor leaving any more.
func (mm *MemoryMember) Expire() {
	m := mm.family
	m.mu.Lock()
	defer m.mu.Unlock()
	if mm.gone {
		return
	}
	mm.gone = true
	delete(m.members, mm.name)
	for being, l := range m.locks {
		if l.owner == mm {
			delete(m.locks, being)
		}
	}
	m.changed()
}

// Look reads the placement as mm sees it.
func (mm *MemoryMember) Look(ctx context.Context) (Placement, error) {
	if err := ctx.Err(); err != nil {
		return Placement{}, err
	}
	m := mm.family
	m.mu.Lock()
	defer m.mu.Unlock()
	if mm.gone {
		return Placement{}, fmt.Errorf("look: member %s: %w", mm.name, ErrNotHeld)
	}
	p := Empty()
	for _, other := range m.members {
		if !other.leaving {
			p.Members++
		}
	}
	for child, parent := range m.registered {
		p.Registered[child] = parent
	}
	for being, status := range m.ended {
		p.Ended[being] = status
	}
	for being := range m.stopping {
		p.Stopping[being] = true
	}
	for being, l := range m.locks {
		if l.owner != mm {
			p.Locked[being] = true
		}
		if l.owner.leaving {
			p.LeavingHeld[being] = true
		}
	}
	p.FamilyEnded = m.familyEnd != ""
	return p, nil
}

// TryLockAll takes the free locks of beings.
func (mm *MemoryMember) TryLockAll(ctx context.Context, beings []string) (map[string]Lock, error) {
	if len(beings) > MaxTryAll {
		return nil, fmt.Errorf("%d locks tried at once: at most %d are", len(beings), MaxTryAll)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := mm.family
	m.mu.Lock()
	defer m.mu.Unlock()
	if mm.gone {
		return nil, fmt.Errorf("locks: member %s: %w", mm.name, ErrNotHeld)
	}
	m.revision++
	token := m.revision
	got := map[string]Lock{}
	for _, being := range slices.Compact(slices.Sorted(slices.Values(beings))) {
		if m.locks[being] != nil {
			continue
		}
		l := &memoryLock{owner: mm, being: being, token: token}
		m.locks[being] = l
		got[being] = l
	}
	return got, nil
}

// MarkLeaving records that mm leaves.
func (mm *MemoryMember) MarkLeaving(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m := mm.family
	m.mu.Lock()
	defer m.mu.Unlock()
	if mm.gone {
		return fmt.Errorf("leaving: member %s: %w", mm.name, ErrNotHeld)
	}
	mm.leaving = true
	m.changed()
	return nil
}

// End records the end of l's being, or the family's for the root.
func (mm *MemoryMember) End(ctx context.Context, l Lock, status string) error {
	return mm.underLock(ctx, l, "end", func(m *Memory) {
		if l.Being() == RootBeing {
			m.familyEnd = status
			return
		}
		m.ended[l.Being()] = status
	})
}

// StopChildren records that l's being stops for good.
func (mm *MemoryMember) StopChildren(ctx context.Context, l Lock) error {
	return mm.underLock(ctx, l, "stop", func(m *Memory) { m.stopping[l.Being()] = true })
}

func (mm *MemoryMember) underLock(ctx context.Context, l Lock, what string, f func(*Memory)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m := mm.family
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.heldLocked(l) {
		return fmt.Errorf("%s of being %s under token %d: %w", what, l.Being(), l.Token(), ErrNotHeld)
	}
	f(m)
	m.changed()
	return nil
}

// Watch wakes the receiver at every change of the family until ctx ends.
func (mm *MemoryMember) Watch(ctx context.Context) <-chan struct{} {
	m := mm.family
	w := make(chan struct{}, 1)
	m.mu.Lock()
	m.watchers = append(m.watchers, w)
	m.mu.Unlock()
	go func() {
		<-ctx.Done()
		m.mu.Lock()
		m.watchers = slices.DeleteFunc(m.watchers, func(c chan struct{}) bool { return c == w })
		m.mu.Unlock()
	}()
	return w
}

// memoryLock is a lock of a Memory family.
type memoryLock struct {
	owner *MemoryMember
	being string
	token uint64
}

func (l *memoryLock) Being() string { return l.being }
func (l *memoryLock) Token() uint64 { return l.token }

// Unlock lets the being go, if l still holds it.
func (l *memoryLock) Unlock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m := l.owner.family
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locks[l.being] == l {
		delete(m.locks, l.being)
		m.changed()
	}
	return nil
}
