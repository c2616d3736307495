package state

import (
	"fmt"
	"path/filepath"

	"github.com/wisent/singularity/supervision"
)

// Boot applies the boot gates of docs/state.md#boot-gates to dir and returns
// the opened store and the being to live with:
//
//   - no state, no resume: newBeing builds a fresh being, which is written
//     as the directory's first state.json (mode 0700 directory, 0600 file);
//   - state exists, no resume: refused, the state is not read;
//   - resume, no state: refused;
//   - resume: the state is loaded; a schema other than being-v1, an
//     unreadable or malformed file, or an identity differing from id in
//     any field is refused.
//
// Every refusal is a ClassState error (exit 4) carrying the spec's
// sentence, and leaves state.json byte-for-byte as it was. Resumed is
// true when the being was loaded rather than created.
func Boot(dir string, resume bool, id Identity, newBeing func() (*Being, error)) (store *Store, being *Being, resumed bool, err error) {
	exists, err := Exists(dir)
	if err != nil {
		return nil, nil, false, err
	}
	switch {
	case !exists && !resume:
		b, err := newBeing()
		if err != nil {
			return nil, nil, false, fmt.Errorf("create being: %w", err)
		}
		store, err := Open(dir)
		if err != nil {
			return nil, nil, false, err
		}
		if err := store.Create(b); err != nil {
			return nil, nil, false, err
		}
		return store, b, false, nil
	case exists && !resume:
		return nil, nil, false, alreadyExists(dir)
	case !exists && resume:
		return nil, nil, false, supervision.New(supervision.ClassState, "resume requested but no state exists")
	}
	b, err := Load(dir)
	if err != nil {
		return nil, nil, false, err
	}
	if b.Identity != id {
		return nil, nil, false, supervision.New(supervision.ClassState, "resume identity does not match configuration")
	}
	store, err = Open(dir)
	if err != nil {
		return nil, nil, false, err
	}
	return store, b, true, nil
}

func alreadyExists(dir string) error {
	return supervision.Errorf(supervision.ClassState,
		"state already exists at %s; use --resume or a new directory", filepath.Join(dir, StateFile))
}
