// Package member is one `singularity run` process's place in a family
// that spans processes: it joins the family in etcd under the member's
// lease, refusing a name that is taken, a state root or family that is
// not the family's, and a protocol another live member does not speak;
// it holds beings under a lock (Holding): the whole family under the
// root's, or, in a family spread over members, each being under its own;
// it watches the other members' processes, ending the lease of one
// that is gone (Lifeline); and it decides, as pure functions, where a
// spread family's beings go (Plan, StopOrder) and what a member does
// after a join, a signal or its family's stop (AfterJoin, OnSignal,
// AfterStop).
//
// Keys, under the family's prefix /singularity/<family>/:
//
//	family          {"root_id": R}: which shared root the family lives on
//	member/<name>   {"name", "address", "protocol", "root_id", "lease",
//	                "placement"}, on the member's lease, so it is gone
//	                when the member is
//	ended           {"status": S}: the family ended with its root's
//	                status S, written under the root's lock; no member
//	                holds the family again
//
// The shared root holds cluster.json, {"family": F, "root_id": R},
// written once, by the first member, before the family record.
package member

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/wisent/singularity/internal/boundedfile"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/wire/clusterpb"
)

// MarkerFile is the shared root's record of the family it holds.
const MarkerFile = "cluster.json"

// maxMarkerBytes caps the marker read: it holds two identifiers.
const maxMarkerBytes = 64 << 10

// The refusals of Join. Each is wrapped in a one-line sentence naming
// what differs.
var (
	ErrNameTaken     = errors.New("another live member has this name")
	ErrAnotherRoot   = errors.New("the family lives on another state root")
	ErrAnotherFamily = errors.New("the state root holds another family")
	ErrProtocol      = errors.New("a live member speaks another protocol version")
	ErrPlacement     = errors.New("a live member places the family's beings otherwise")
)

// Config is what a member presents when it joins.
type Config struct {
	// Name is the member's name, unique among the family's live members
	// (identity.Valid: no slash).
	Name string
	// Address is where the member's protoactor remote listens.
	Address string
	// Root is the shared state root.
	Root string
	// Protocol is the version of clusterpb the member speaks; zero means
	// clusterpb.ProtocolVersion.
	Protocol uint32
	// Placement is how the member places the family's beings
	// (docs/cluster.md#placement): "" or "family" (the family as one
	// unit), "being" (each being on its own); every live member places
	// alike.
	Placement string
}

// Info is a live member as its record in etcd says.
type Info struct {
	Name     string `json:"name"`
	Address  string `json:"address"`
	Protocol uint32 `json:"protocol"`
	RootID   string `json:"root_id"`
	// Lease is the member's etcd lease in hex, the last part of every
	// lock key it holds or waits on.
	Lease string `json:"lease"`
	// Placement is Config.Placement; "" is "family".
	Placement string `json:"placement,omitempty"`
}

type marker struct {
	Family string `json:"family"`
	RootID string `json:"root_id"`
}

type familyRecord struct {
	RootID string `json:"root_id"`
}

// Member is a joined member. Leave ends its membership; the session
// stays the caller's.
type Member struct {
	session *fence.Session
	info    Info
}

// Join enters the family of session as cfg.Name. The first member of a
// family writes the root's marker and the family record; every later
// one must find the same root and family, a free name and no live
// member of another protocol version. A refused join leaves nothing
// behind in etcd and writes nothing to the root.
func Join(ctx context.Context, session *fence.Session, family string, cfg Config) (*Member, error) {
	if !identity.Valid(cfg.Name) {
		return nil, fmt.Errorf("the member name %q is not 1 to 128 ASCII letters, digits or any of \"-_.:\"", cfg.Name)
	}
	if cfg.Protocol == 0 {
		cfg.Protocol = clusterpb.ProtocolVersion
	}
	rootID, err := familyRoot(ctx, session, family, cfg.Root)
	if err != nil {
		return nil, err
	}
	if cfg.Placement == "family" {
		cfg.Placement = ""
	}
	info := Info{Name: cfg.Name, Address: cfg.Address, RootID: rootID, Protocol: cfg.Protocol, Lease: fmt.Sprintf("%x", session.Lease()), Placement: cfg.Placement}
	data, _ := json.Marshal(info) // strings and a number: cannot fail
	for range maxJoinTries {
		live, rev, err := listAt(ctx, session)
		if err != nil {
			return nil, err
		}
		for _, m := range live {
			if m.Protocol != cfg.Protocol && m.Name != cfg.Name {
				return nil, fmt.Errorf("member %s speaks protocol %d and this build %d: %w", m.Name, m.Protocol, cfg.Protocol, ErrProtocol)
			}
			if m.Placement != cfg.Placement && m.Name != cfg.Name {
				return nil, fmt.Errorf("member %s places by %s and this one by %s: %w", m.Name, placementName(m.Placement), placementName(cfg.Placement), ErrPlacement)
			}
		}
		// The record is written only if no member record was written
		// since the list was read: two members of different protocols
		// joining at once cannot both get in, as the second one lists
		// again and finds the first.
		written, taken, err := session.PutMember(ctx, cfg.Name, data, rev)
		switch {
		case err != nil:
			return nil, err
		case written:
			return &Member{session: session, info: info}, nil
		case taken:
			return nil, fmt.Errorf("member %s: %w", cfg.Name, ErrNameTaken)
		}
	}
	return nil, fmt.Errorf("cannot write the record of member %s: the family's members kept changing (%d tries)", cfg.Name, maxJoinTries)
}

func placementName(p string) string {
	if p == "" {
		return "family"
	}
	return p
}

// maxJoinTries bounds how often Join lists the members again because
// another member joined while it judged them.
const maxJoinTries = 16

// familyRoot checks the root against the family and returns the root's
// id, creating the marker and the family record for the first member.
func familyRoot(ctx context.Context, session *fence.Session, family, root string) (string, error) {
	value, exists, err := session.FamilyRecord(ctx)
	if err != nil {
		return "", err
	}
	mark, found, err := readMarker(root)
	if err != nil {
		return "", err
	}
	if found && mark.Family != family {
		return "", fmt.Errorf("%s names family %s, not %s: %w", filepath.Join(root, MarkerFile), mark.Family, family, ErrAnotherFamily)
	}
	if exists {
		var rec familyRecord
		if err := json.Unmarshal(value, &rec); err != nil || rec.RootID == "" {
			return "", fmt.Errorf("the family record of %s is not {\"root_id\":R}: %q", family, value)
		}
		if !found || mark.RootID != rec.RootID {
			return "", fmt.Errorf("%s is not the root family %s lives on (root %s): %w", root, family, rec.RootID, ErrAnotherRoot)
		}
		return rec.RootID, nil
	}
	if !found {
		// Written exclusively, then judged as read: a first member
		// racing on this root may have written its own.
		if err := writeMarker(root, marker{Family: family, RootID: newRootID()}); err != nil {
			return "", err
		}
		return familyRoot(ctx, session, family, root)
	}
	data, _ := json.Marshal(familyRecord{RootID: mark.RootID})
	created, err := session.CreateFamilyRecord(ctx, data)
	if err != nil {
		return "", err
	}
	if !created {
		// Another first member won: judge the root against its record.
		return familyRoot(ctx, session, family, root)
	}
	return mark.RootID, nil
}

func newRootID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on Linux
	return hex.EncodeToString(b[:])
}

func readMarker(root string) (marker, bool, error) {
	path := filepath.Join(root, MarkerFile)
	data, err := boundedfile.Read(path, maxMarkerBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return marker{}, false, nil
	}
	if err != nil {
		return marker{}, false, fmt.Errorf("cannot read %s: %w", path, err)
	}
	var m marker
	if err := json.Unmarshal(data, &m); err != nil || m.Family == "" || m.RootID == "" {
		return marker{}, false, fmt.Errorf("%s is not {\"family\":F,\"root_id\":R}", path)
	}
	return m, true, nil
}

// writeMarker creates the root's marker durably and exclusively (a temp
// file fsynced, linked to its name, the directory fsynced). Two first
// members racing on one root: the loser reads the winner's marker.
func writeMarker(root string, m marker) error {
	path := filepath.Join(root, MarkerFile)
	data, _ := json.Marshal(m)
	// The first member of a fresh family may find no root yet: it is
	// made as a being's state directory is (0700).
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	f, err := os.CreateTemp(root, ".cluster-*.tmp")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // the other member's marker stands; the caller rereads
		}
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	d, err := os.Open(root)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}

// Info is the member's record.
func (m *Member) Info() Info { return m.info }

// Leave deletes the member's record now, not at its lease's end.
func (m *Member) Leave(ctx context.Context) error {
	return m.session.DeleteMember(ctx, m.info.Name)
}

// Members lists the family's live members, by name.
func (m *Member) Members(ctx context.Context) ([]Info, error) {
	return Live(ctx, m.session)
}

// Live lists the live members of session's family, by name, without a
// Member (a member that has not joined yet, or one that shows the
// family).
func Live(ctx context.Context, session *fence.Session) ([]Info, error) {
	out, _, err := listAt(ctx, session)
	return out, err
}

// listAt is Live and the etcd revision it was read at.
func listAt(ctx context.Context, session *fence.Session) ([]Info, int64, error) {
	records, rev, err := session.MemberRecords(ctx)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Info, 0, len(records))
	for _, name := range slices.Sorted(maps.Keys(records)) {
		var info Info
		if err := json.Unmarshal(records[name], &info); err != nil {
			return nil, 0, fmt.Errorf("the record of member %s is not a member: %q", name, records[name])
		}
		out = append(out, info)
	}
	return out, rev, nil
}

// Holder is the live member that holds being's lock in session's
// family. ok is false when nobody holds or waits for the lock, or when
// the holder's record is gone (it left, or its lease ended and the lock
// key goes with it).
func Holder(ctx context.Context, session *fence.Session, being string) (info Info, ok bool, err error) {
	lease, held, err := session.HolderLease(ctx, being)
	if err != nil || !held {
		return Info{}, false, err
	}
	live, err := Live(ctx, session)
	if err != nil {
		return Info{}, false, err
	}
	for _, m := range live {
		if m.Lease == lease {
			return m, true, nil
		}
	}
	return Info{}, false, nil
}
