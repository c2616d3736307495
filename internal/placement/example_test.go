package placement_test

import (
	"context"
	"fmt"

	"github.com/wisent/singularity/internal/placement"
)

// Two members of one family in memory: the first takes the root and
// registers a child under its lock; the second sees the root locked and
// takes the child; the child's end is recorded under its lock.
func ExampleMemory() {
	ctx := context.Background()
	family := placement.NewMemory()
	m1, _ := family.Join("m1")
	m2, _ := family.Join("m2")

	locks, _ := m1.TryLockAll(ctx, []string{placement.RootBeing})
	_ = family.Register(locks[placement.RootBeing], "bo")

	seen, _ := m2.Look(ctx)
	fmt.Println("members:", seen.Members, "placeable:", seen.Placeable(), "locked by another:", seen.Locked)

	taken, _ := m2.TryLockAll(ctx, []string{placement.RootBeing, "bo"})
	fmt.Println("m2 took:", len(taken), taken["bo"].Being())

	_ = m2.End(ctx, taken["bo"], "exhausted")
	seen, _ = m1.Look(ctx)
	fmt.Println("ended:", seen.Ended, "placeable:", seen.Placeable())
	// Output:
	// members: 2 placeable: [root bo] locked by another: map[root:true]
	// m2 took: 1 bo
	// ended: map[bo:exhausted] placeable: [root]
}
