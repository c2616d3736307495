package las

import (
	"github.com/wisent/singularity/internal/keeper"
	"github.com/wisent/singularity/internal/mcpstdio"
)

// KeeperCommand is the argument that makes a keeper binary run as the Las
// keeper (Options.Keeper; docs/las.md#leftovers).
const KeeperCommand = keeper.Command

// keeperDeathSignal is the parent-death signal of a Las started under a
// keeper.
const keeperDeathSignal = keeper.DeathSignal

// RunKeeper is the Las keeper, the runtime binary's KeeperCommand mode:
// see keeper.Run.
func RunKeeper(args []string) int { return keeper.Run(args) }

// BecomeSubreaper makes the runtime the child subreaper of every Las it
// starts, so that what a Las leaves behind is ended when it stops
// (docs/las.md#leftovers): see mcpstdio.BecomeSubreaper.
func BecomeSubreaper() error { return mcpstdio.BecomeSubreaper() }
