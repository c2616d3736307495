package state

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/wisent/singularity/supervision/fault"
)

// Check applies the boot gates of docs/state.md#boot-gates to dir
// without writing anything:
//
//   - no state, no resume: newBeing builds a fresh being, returned with
//     resumed false and not yet written: its owner writes it as the
//     directory's first state.json once every other boot check passed;
//   - state exists, no resume: refused, the state is not read;
//   - resume, no state: refused;
//   - resume: the state is loaded; a schema other than being-v1, an
//     unreadable or malformed file, or an identity differing from id in
//     any field is refused.
//
// Every refusal is a ClassState error (exit 4) carrying its sentence in
// docs/state.md#boot-gates.
func Check(dir string, resume bool, id Identity, newBeing func() (*Being, error)) (being *Being, resumed bool, err error) {
	return CheckOpen(dir, resume, id, 0, newBeing)
}

// CheckOpen is Check for an identity whose fields in open no variable
// set (docs/state.md#identity): on resume those fields are not compared,
// and the being loaded keeps its own; a fresh being is newBeing's, with
// the defaults id holds.
func CheckOpen(dir string, resume bool, id Identity, open IdentityFields, newBeing func() (*Being, error)) (being *Being, resumed bool, err error) {
	exists, err := Exists(dir)
	if err != nil {
		return nil, false, err
	}
	switch {
	case !exists && !resume:
		b, err := newBeing()
		if err != nil {
			return nil, false, fmt.Errorf("create being: %w", err)
		}
		return b, false, nil
	case exists && !resume:
		return nil, false, alreadyExists(dir)
	case !exists && resume:
		return nil, false, fault.New(fault.ClassState, "resume requested but no state exists")
	}
	b, err := Load(dir)
	if err != nil {
		return nil, false, err
	}
	if b.Identity != id.Adopt(b.Identity, open) {
		return nil, false, fault.New(fault.ClassState, "resume identity does not match configuration")
	}
	return b, true, nil
}

// Boot is Check followed, for a fresh being, by writing it as the
// directory's first state.json (mode 0700 directory, 0600 file); it
// returns the opened store. Refusals leave state.json byte-for-byte as
// it was.
func Boot(dir string, resume bool, id Identity, newBeing func() (*Being, error)) (store *Store, being *Being, resumed bool, err error) {
	being, resumed, err = Check(dir, resume, id, newBeing)
	if err != nil {
		return nil, nil, false, err
	}
	store, err = Open(dir)
	if err != nil {
		return nil, nil, false, err
	}
	if !resumed {
		if err := store.Create(being); err != nil {
			return nil, nil, false, err
		}
	}
	return store, being, resumed, nil
}

// ErrExists is the cause of a refusal to create a being's first state
// where one already is.
var ErrExists = errors.New("state already exists")

func alreadyExists(dir string) error {
	return fault.Errorf(fault.ClassState,
		"%w at %s; use --resume or a new directory", ErrExists, filepath.Join(dir, StateFile))
}
