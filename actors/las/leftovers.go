package las

import "github.com/wisent/singularity/internal/mcpstdio"

// KeeperCommand is the argument that makes the runtime's binary run as a
// Las keeper (Options.Keeper; docs/las.md#leftovers).
const KeeperCommand = mcpstdio.KeeperCommand

// keeperDeathSignal is the parent-death signal of a Las started under a
// keeper.
const keeperDeathSignal = mcpstdio.KeeperDeathSignal

// RunKeeper is the Las keeper, the runtime binary's KeeperCommand mode:
// see mcpstdio.RunKeeper.
func RunKeeper(args []string) int { return mcpstdio.RunKeeper(args) }

// BecomeSubreaper makes the runtime the child subreaper of every Las it
// starts, so that what a Las leaves behind is ended when it stops
// (docs/las.md#leftovers): see mcpstdio.BecomeSubreaper.
func BecomeSubreaper() error { return mcpstdio.BecomeSubreaper() }
