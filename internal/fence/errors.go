package fence

import "errors"

// The outcomes and refusals of the package, for errors.Is; every error
// it returns that means one of them wraps it.
var (
	// ErrFenced: the commit was not applied, and cannot be: the being's
	// lock is no longer this member's (its key is gone, or the session
	// ended). The being must stop.
	ErrFenced = errors.New("fenced: the being's lock is no longer this member's")
	// ErrOutcomeUnknown: etcd did not answer the commit in time, or was
	// unavailable; it may or may not have been applied. The being must
	// stop, and the next holder decides from the commit record.
	ErrOutcomeUnknown = errors.New("the commit's outcome is unknown")
	// ErrLocked: TryLock found the being locked by another member.
	ErrLocked = errors.New("the being is locked by another member")
	// ErrHeld: this member already holds (or is taking) the being's lock.
	ErrHeld = errors.New("the being's lock is already this member's")
	// ErrClosed: the session or batcher is closed; nothing was sent.
	ErrClosed = errors.New("the fencing session is closed")
	// ErrJournalBehind: the journal lacks steps the commit record says
	// were committed.
	ErrJournalBehind = errors.New("the journal lacks committed steps")
	// ErrJournalGap: the trusted events of a journal are not one run of
	// seqs (one missing, or one twice).
	ErrJournalGap = errors.New("the journal's trusted events are not one run of seqs")
)
