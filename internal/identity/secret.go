package identity

import "log/slog"

// Secret holds a credential. It never prints its value: fmt, slog and JSON
// all see "[redacted]". Reveal is the only way to the bytes and is called
// only where the credential is used (signing a request, a bearer header).
// The zero value holds no credential.
type Secret struct{ value []byte }

// NewSecret wraps a copy of a credential value.
func NewSecret(value []byte) Secret { return Secret{value: append([]byte(nil), value...)} }

// Reveal returns a copy of the credential's bytes.
func (s Secret) Reveal() []byte { return append([]byte(nil), s.value...) }

// IsSet reports whether a credential is present.
func (s Secret) IsSet() bool { return len(s.value) > 0 }

const redacted = "[redacted]"

func (s Secret) String() string               { return redacted }
func (s Secret) GoString() string             { return redacted }
func (s Secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
