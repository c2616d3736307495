package fence

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/internal/store/state"
)

// The keys of a family whose beings are spread over its members
// (docs/cluster.md#placement), beside lock/ and commit/:
//
//	being/<child>   a child being's registration, its parent's id as the
//	                value: put in the transaction that commits the step
//	                recording the child (child_added), so a child whose
//	                record did not commit is never registered
//	ended/<being>   a being that will not cycle again (exhausted,
//	                failed, or stopped for good with its parent), its
//	                status as the value: put under the being's lock by
//	                the member that held it last
//	stop/<being>    a being that stops for good: its children are to
//	                stop for good before it, wherever they run; put
//	                under the being's lock
func (k keys) registration(being string) string { return k.prefix + "being/" + being }

func (k keys) end(being string) string { return k.prefix + "ended/" + being }

func (k keys) stop(being string) string { return k.prefix + "stop/" + being }

// FenceStep is Fence for the step's last event, and it registers every
// child the step records (child_added) in the same transaction: a child
// is registered exactly when its record is committed. A step that funds
// the being (funded, which un-ends an exhausted being) takes its ended/
// mark away in that transaction too, so that the being is placed again
// exactly when its fund counts (docs/cluster.md#the-operators-channel).
func (c *Committer) FenceStep(step []state.Event) error {
	if len(step) == 0 {
		return nil
	}
	var children []string
	funded := false
	for _, e := range step {
		switch {
		case e.Type == state.EventChildAdded && e.Child != nil:
			children = append(children, e.Child.ID)
		case e.Type == state.EventFunded:
			funded = true
		}
	}
	if len(children) == 0 && !funded {
		return c.Fence(step[len(step)-1].Seq)
	}
	return c.fence(step[len(step)-1].Seq, children, funded)
}

// registrations are the puts that register children of l's being.
func registrations(l *Lock, children []string) ([]clientv3.Op, error) {
	ops := make([]clientv3.Op, 0, len(children))
	for _, id := range children {
		if err := validName("the child's id", id); err != nil {
			return nil, fmt.Errorf("commit of being %s: %w", l.being, err)
		}
		ops = append(ops, clientv3.OpPut(l.s.keys.registration(id), l.being))
	}
	return ops, nil
}

// Registered reads every registered child of the family: its id and its
// parent's.
func (s *Session) Registered(ctx context.Context) (map[string]string, error) {
	return s.listed(ctx, s.keys.registration(""), "registrations")
}

// EndedBeings reads every being recorded as ended, with its status.
func (s *Session) EndedBeings(ctx context.Context) (map[string]string, error) {
	return s.listed(ctx, s.keys.end(""), "ended beings")
}

func (s *Session) listed(ctx context.Context, prefix, what string) (map[string]string, error) {
	resp, err := s.client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cannot read the family's %s: %w", what, err)
	}
	out := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), prefix)] = string(kv.Value)
	}
	return out, nil
}

// End records that l's being will not cycle again, with its status,
// while l is held: ErrFenced when it is not, ErrOutcomeUnknown when etcd
// did not answer.
func (l *Lock) End(ctx context.Context, status string) error {
	return l.putHeld(ctx, "end", l.s.keys.end(l.being), status)
}

// StopChildren records, while l is held, that l's being stops for good:
// its children are to stop for good first.
func (l *Lock) StopChildren(ctx context.Context) error {
	return l.putHeld(ctx, "stop", l.s.keys.stop(l.being), "")
}

func (l *Lock) putHeld(ctx context.Context, what, key, value string) error {
	resp, err := l.s.client.Txn(ctx).If(guard(l)).Then(clientv3.OpPut(key, value)).Commit()
	switch {
	case err != nil:
		return fmt.Errorf("%s of being %s under token %d: %w: %w", what, l.being, l.token, ErrOutcomeUnknown, err)
	case !resp.Succeeded:
		return fmt.Errorf("%s of being %s under token %d: %w", what, l.being, l.token, ErrFenced)
	}
	return nil
}
