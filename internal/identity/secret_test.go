package identity

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSecretNeverPrints(t *testing.T) {
	s := NewSecret([]byte("hunter2"))
	for _, text := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s %q", s, s, s, s, s)} {
		assert.NotContains(t, text, "hunter2")
	}
	b, err := s.MarshalJSON()
	require.NoError(t, err)
	assert.NotContains(t, string(b), "hunter2")
	assert.Equal(t, "hunter2", string(s.Reveal()))
}

func TestSecretIsACopy(t *testing.T) {
	value := []byte("abc")
	s := NewSecret(value)
	value[0] = 'x'
	s.Reveal()[1] = 'y'
	assert.Equal(t, "abc", string(s.Reveal()))
	assert.True(t, s.IsSet())
	assert.False(t, Secret{}.IsSet())
}
