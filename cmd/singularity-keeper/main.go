// Command singularity-keeper is the Las keeper on its own
// (internal/keeper, docs/las.md#leftovers): installed beside the
// singularity binary, it is what the runtime starts each Las under, at a
// fraction of the CPU a start of the whole runtime's binary costs.
//
//	singularity-keeper las-keeper <runtime pid> <command> [args...]
//	singularity-keeper --version
package main

import (
	"fmt"
	"os"

	"github.com/wisent/singularity/internal/keeper"
)

// revision is the VCS revision `make build` and `make install` embed with
// -ldflags -X, as in the singularity binary beside it; empty in a binary
// built otherwise.
var revision string

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println(versionLine(revision))
		return
	}
	if len(os.Args) < 2 || os.Args[1] != keeper.Command {
		fmt.Fprintf(os.Stderr, "singularity-keeper: usage: singularity-keeper %s <runtime pid> <command> [args...]\n", keeper.Command)
		os.Exit(2)
	}
	os.Exit(keeper.Run(os.Args[2:]))
}

// versionLine is what --version prints: "singularity-keeper (revision
// <rev>)", the revision the build embedded, or "(revision unknown)"; the
// keeper reads no build information, so that its start stays small.
func versionLine(rev string) string {
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("singularity-keeper (revision %s)", rev)
}
