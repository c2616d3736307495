// Package fence fences a being's durable steps by etcd, for a family
// whose beings live on several machines (docs/cluster.md). Nothing of it
// runs when no cluster is configured: single-process journals and
// state.json stay as they are.
//
// The contract:
//
//   - A member (one process of the family) opens one Session: one etcd
//     client and one lease, kept alive, with a time to live of TTL
//     (DefaultTTL, 3 s). Done is closed when the lease is lost (expired,
//     revoked, or not renewed within its TTL while etcd is away): the
//     member has lost every lock and must fence itself.
//   - Lock takes a being's lock under the session's lease, waiting while
//     another member holds it. Its Token, the fencing token, is the
//     create revision of the holder's lock key: it grows with every new
//     holder and is never reused.
//   - A step of a held being is durable only when its journal lines are
//     appended and fsynced locally and then the fence accepted it: an
//     etcd transaction If(CreateRevision(lock key) == token) Then
//     Put(commit record, {token, seq}) succeeded. Committer is that
//     fence, behind durable.Fence: the durable engine appends first and
//     asks the fence with the seq of the step's last event.
//   - A commit ends in one of three ways. Accepted: the commit record
//     holds {token, seq}. ErrFenced: the compare was false (the lock key
//     is gone, so another member may hold the being) or the session had
//     already ended; the record is unchanged. ErrOutcomeUnknown: etcd did
//     not answer within CommitTimeout or was unavailable; the commit may
//     or may not have been applied. Either error is final for the
//     Committer (every later call answers it again), and the being must
//     stop: after ErrOutcomeUnknown it must never retry as if fenced, nor
//     as if committed. The next holder decides from the commit record.
//   - A Batcher puts the commits of a member's beings that arrive while
//     a transaction is in flight into one transaction (one compare and
//     one put per being, at most MaxBatch beings). When one of its
//     compares fails, each being's commit is tried in a transaction of
//     its own, so only the fenced beings are fenced. There is no timer:
//     a batch is what queued while the previous transaction ran.
//   - Committed reads a being's commit record; Trust says how far a
//     journal is trusted given that record: a journal written under an
//     old token is trusted only up to what was committed.
//
// Keys, under the family's prefix /singularity/<family>/:
//
//	lock/<being>/<lease, hex>   the being's lock (an etcd mutex): one key
//	                            per member that holds or waits for it, on
//	                            that member's lease; the oldest holds it
//	commit/<being>              the commit record, JSON {"token":T,"seq":S}:
//	                            the last step accepted under token T ends
//	                            with event seq S
//
// How a step carries its token: by the journal segment it is written
// to, never by a field of its lines. A clustered being writes the steps
// of each token to a segment of their own, so every journal file has
// exactly one writer in its whole life, and a frozen former holder that
// wakes up appends only to its own, old segment: it can neither tear nor
// interleave with the new holder's lines, whatever the shared storage
// does with concurrent appends. The lines themselves are the ones a
// single process writes, so nothing changes when no cluster is
// configured. Trust takes the events tagged by their segment's token.
package fence
