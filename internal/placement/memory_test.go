package placement_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/placement"
	"github.com/wisent/singularity/internal/placement/placementtest"
)

// memoryFamily is a Memory family for the contract.
type memoryFamily struct{ m *placement.Memory }

func (f memoryFamily) Join(t *testing.T, name string) placement.Store {
	s, err := f.m.Join(name)
	require.NoError(t, err)
	return s
}

func (f memoryFamily) Register(t *testing.T, l placement.Lock, child string) {
	require.NoError(t, f.m.Register(l, child))
}

func (f memoryFamily) Expire(t *testing.T, s placement.Store) {
	s.(*placement.MemoryMember).Expire()
}

func TestMemoryKeepsTheContract(t *testing.T) {
	placementtest.Run(t, func(t *testing.T) placementtest.Family { return memoryFamily{placement.NewMemory()} })
}
