package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/memberlink"
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
	info, ok, err := member.Holder(ctx, session.Client(), s.family, member.RootBeing)
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
