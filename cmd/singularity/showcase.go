package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/memberlink"
	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/debug"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/metrics"
	"github.com/wisent/singularity/internal/wire/clusterpb"
)

// showcase is what a member of a family across processes shows of its
// family, for its whole life as a process: on its debug endpoint and to
// the members that ask its link (memberlink). Holding the family it
// shows the family's actor tree, each being labelled with this member;
// standing by it shows the tree its holder answers, and each being's
// committed journal from the shared root
// (docs/cluster.md#status).
type showcase struct {
	name     string
	family   string
	stateDir string
	// system is the member's own actor system, which protoactor-go's
	// remote serves: it asks the holder's link.
	system *actor.ActorSystem
	// standbyMetrics are what a standby exports: the process, the
	// build, with the member label.
	standbyMetrics http.Handler

	handler atomic.Pointer[http.Handler]
	holding atomic.Pointer[heldView]
	// relayed, while set, carries out the control requests other
	// members relay to the beings this member holds (relay).
	relayed atomic.Pointer[control.Handler]
	// session is the session of the member's membership now, nil
	// between sessions: the operator's requests for beings this member
	// does not hold are forwarded through it (listenForOperator).
	session atomic.Pointer[fence.Session]
	// ended are the nodes of a spread family's ended beings, by id: an
	// ended being never changes, so its state is read once, not at
	// every request.
	ended sync.Map
}

// heldView is the family this member holds and serves.
type heldView struct {
	cfg   debug.HandlerConfig
	token uint64
}

func newShowcase(name, family, stateDir string, system *actor.ActorSystem) *showcase {
	reg := metrics.New(metrics.Options{Process: true, Member: name})
	reg.SetBuild(buildInfo().metrics())
	s := &showcase{name: name, family: family, stateDir: stateDir, system: system, standbyMetrics: reg.Handler()}
	s.standBy(nil)
	return s
}

// ServeHTTP serves the debug routes of what the member shows now.
func (s *showcase) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.handler.Load()).ServeHTTP(w, r)
}

// hold shows the family this member holds under token, as cfg collects
// it.
func (s *showcase) hold(cfg debug.HandlerConfig, token uint64) {
	s.holding.Store(&heldView{cfg: cfg, token: token})
	h := debug.Handler(cfg)
	s.handler.Store(&h)
}

// standBy shows the family as its holder does, found through session
// (nil between memberships: the routes then say the member has not
// joined).
func (s *showcase) standBy(session *fence.Session) {
	s.holding.Store(nil)
	s.session.Store(session)
	cfg := debug.HandlerConfig{
		StateDir: s.stateDir,
		Metrics:  s.standbyMetrics,
		Elsewhere: func(ctx context.Context) (debug.Node, error) {
			return s.fromHolder(ctx, session)
		},
	}
	if session != nil {
		cfg.Committed = member.CommittedOf(session, s.stateDir)
	}
	h := debug.Handler(cfg)
	s.handler.Store(&h)
}

var errNotJoined = errors.New("this member has not joined its family: it waits for etcd")

// fromHolder asks the member holding the family for its tree.
func (s *showcase) fromHolder(ctx context.Context, session *fence.Session) (debug.Node, error) {
	if session == nil {
		return debug.Node{}, errNotJoined
	}
	info, ok, err := member.Holder(ctx, session, member.RootBeing)
	switch {
	case err != nil:
		return debug.Node{}, fmt.Errorf("cannot find the member holding the family: %w", err)
	case !ok:
		return debug.Node{}, errors.New("no member holds the family now: ask again in a moment")
	case info.Name == s.name:
		return debug.Node{}, errors.New("this member is taking the family over: ask again in a moment")
	}
	tree, err := memberlink.Ask(s.system, info.Address, s.name, memberlink.DefaultDeadline)
	if err != nil {
		return debug.Node{}, fmt.Errorf("member %s holds the family: %w", info.Name, err)
	}
	if !tree.GetHolding() {
		return debug.Node{}, fmt.Errorf("member %s holds the family's lock but does not run it yet: ask again in a moment", info.Name)
	}
	node, err := debug.DecodeTree(tree.GetTreeJson())
	if err != nil {
		return debug.Node{}, fmt.Errorf("member %s answered a tree this member cannot read: %w", info.Name, err)
	}
	return node, nil
}

// answer is the link's answer to another member (memberlink.Shown):
// the tree it holds, else (standing by, or a tree it cannot encode) that
// it does not hold the family.
func (s *showcase) answer(ctx context.Context, _ string) *clusterpb.FamilyTree {
	if view := s.holding.Load(); view != nil {
		if tree, err := debug.TreeOf(ctx, view.cfg); err == nil {
			if raw, err := tree.MarshalJSON(); err == nil {
				return &clusterpb.FamilyTree{Member: s.name, Holding: true, Token: view.token, TreeJson: raw}
			}
		}
	}
	return &clusterpb.FamilyTree{Member: s.name}
}

// relay is the link's answer to a control request another member
// relays to this one (memberlink.Props): carried out as the member's
// control socket carries it out while the member holds beings
// (memberFamilies.serveControl), NotHere otherwise.
func (s *showcase) relay(ctx context.Context, req control.Request) control.Reply {
	if handle := s.relayed.Load(); handle != nil {
		return (*handle)(ctx, req)
	}
	return control.Reply{NotHere: true}
}

// spreadOver shows a family spread over members (--cluster-placement
// being) as this member runs its part of it, found through session: the
// link answers this member's own tree, and the debug routes serve the
// whole family, every member's part merged (spreadTree). It is the
// family's held.show.
func (s *showcase) spreadOver(session *fence.Session) func(cfg debug.HandlerConfig, token uint64) {
	return func(cfg debug.HandlerConfig, token uint64) {
		s.holding.Store(&heldView{cfg: cfg, token: token})
		whole := cfg
		whole.Elsewhere = func(ctx context.Context) (debug.Node, error) {
			return s.spreadTree(ctx, session, cfg)
		}
		h := debug.Handler(whole)
		s.handler.Store(&h)
	}
}

// spreadTree is the whole spread family: this member's part, every
// other live member's as its link answers it (each asked at once,
// within the deadline; a member that does not answer leaves its beings
// unresponsive), and the ended beings as the shared root's committed
// state shows them.
func (s *showcase) spreadTree(ctx context.Context, session *fence.Session, own debug.HandlerConfig) (debug.Node, error) {
	mine, err := debug.TreeOf(ctx, own)
	if err != nil {
		return debug.Node{}, err
	}
	live, err := member.Live(ctx, session)
	if err != nil {
		return debug.Node{}, err
	}
	parents, err := session.Registered(ctx)
	if err != nil {
		return debug.Node{}, err
	}
	ended, err := session.EndedBeings(ctx)
	if err != nil {
		return debug.Node{}, err
	}
	parts := []debug.Part{{Member: s.name, Tree: mine}}
	answers := make(chan debug.Part, len(live))
	asked := 0
	for _, info := range live {
		if info.Name == s.name {
			continue
		}
		asked++
		go func() {
			part := debug.Part{Member: info.Name}
			if tree, err := memberlink.Ask(s.system, info.Address, s.name, memberlink.DefaultDeadline); err == nil && tree.GetHolding() {
				if node, err := debug.DecodeTree(tree.GetTreeJson()); err == nil {
					part.Tree = node
				}
			}
			answers <- part
		}()
	}
	for range asked {
		parts = append(parts, <-answers)
	}
	slices.SortFunc(parts, func(a, b debug.Part) int { return strings.Compare(a.Member, b.Member) })
	var gone []debug.Ended
	for _, id := range slices.Sorted(maps.Keys(ended)) {
		if node, err := s.endedNode(ctx, session, parents, id, ended[id]); err == nil {
			gone = append(gone, debug.Ended{ID: id, Node: node})
		}
	}
	return debug.MergeSpread(parts, gone, parents), nil
}

// endedNode is an ended being's node as its newest committed state
// shows it, read at its first request and kept.
func (s *showcase) endedNode(ctx context.Context, session *fence.Session, parents map[string]string, id, status string) (debug.Node, error) {
	if node, ok := s.ended.Load(id); ok {
		return node.(debug.Node), nil
	}
	dir, err := member.Dir(s.stateDir, parents, id)
	if err != nil {
		return debug.Node{}, err
	}
	token, seq, err := session.Committed(ctx, id)
	if err != nil {
		return debug.Node{}, err
	}
	b, err := fence.Newest(dir, fence.Record{Token: token, Seq: seq})
	if err != nil {
		return debug.Node{}, err
	}
	budget := b.Budget
	node := debug.Node{PID: "family/being-" + id, Kind: "being", Name: b.Identity.Name, Status: status, Figures: map[string]any{
		"id": id, "cycle": b.Cycle, "starting": budget.Starting.String(), "remaining": budget.Remaining.String(),
		"balance": budget.Remaining.String(), "spent": budget.APISpent.Add(budget.InstanceSpent).String(),
		"earned": budget.Earned.String(), "granted": budget.Granted.String(),
	}}
	s.ended.Store(id, node)
	return node, nil
}
