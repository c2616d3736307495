package las

import "github.com/wisent/singularity/internal/mcpstdio"

// BecomeSubreaper makes the runtime the child subreaper of every Las it
// starts, so that what a Las leaves behind is ended when it stops
// (docs/las.md#leftovers): see mcpstdio.BecomeSubreaper.
func BecomeSubreaper() error { return mcpstdio.BecomeSubreaper() }
