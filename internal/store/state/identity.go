package state

// IdentityFields is a set of identity fields. The configuration uses it
// for the fields no variable set (docs/state.md#identity): a fresh being
// takes their defaults, a resumed one keeps what its state holds.
type IdentityFields uint16

// The identity fields that may be left open. The persona (name, ticker,
// agent type, specialty) always has a value and is never open.
const (
	IdentityAgentID IdentityFields = 1 << iota
	IdentityRole
	IdentityEnvironment
	IdentityHost
	IdentityWorkloadID
	IdentityWorkloadPublicKey
	IdentityExecutableDigest
	IdentityCodeDigest
	IdentityPolicyDigest
	IdentityPolicySequence
)

// Has reports whether f holds every field of g.
func (f IdentityFields) Has(g IdentityFields) bool { return f&g == g }

// Adopt returns id with every field in open taken from stored: the
// identity a being resumed from stored has when the configuration left
// those fields open.
func (id Identity) Adopt(stored Identity, open IdentityFields) Identity {
	fields := []struct {
		field     IdentityFields
		dst, from *string
	}{
		{IdentityAgentID, &id.AgentID, &stored.AgentID},
		{IdentityRole, &id.Role, &stored.Role},
		{IdentityEnvironment, &id.Environment, &stored.Environment},
		{IdentityHost, &id.Host, &stored.Host},
		{IdentityWorkloadID, &id.WorkloadID, &stored.WorkloadID},
		{IdentityWorkloadPublicKey, &id.WorkloadPublicKey, &stored.WorkloadPublicKey},
		{IdentityExecutableDigest, &id.ExecutableDigest, &stored.ExecutableDigest},
		{IdentityCodeDigest, &id.CodeDigest, &stored.CodeDigest},
		{IdentityPolicyDigest, &id.PolicyDigest, &stored.PolicyDigest},
	}
	for _, f := range fields {
		if open.Has(f.field) {
			*f.dst = *f.from
		}
	}
	if open.Has(IdentityPolicySequence) {
		id.PolicySequence = stored.PolicySequence
	}
	return id
}
