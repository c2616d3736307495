// Package identity holds what says who a being is, for every package
// that needs it without the command line: the rule an immutable
// identifier (agent id, role, environment, host, workload id) must
// follow, and Secret, the credential that proves the being's identity to
// Brama and Most and never prints its value.
package identity

// Valid reports whether s is an immutable identifier
// (docs/configuration.md#variables): 1 to 128 ASCII letters, digits or any of
// "-_.:".
func Valid(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}
