// Command singularity-keeper is the Las keeper on its own
// (internal/keeper, docs/las.md#leftovers): installed beside the
// singularity binary, it is what the runtime starts each Las under, at a
// fraction of the CPU a start of the whole runtime's binary costs.
//
//	singularity-keeper las-keeper <runtime pid> <command> [args...]
package main

import (
	"fmt"
	"os"

	"github.com/wisent/singularity/internal/keeper"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != keeper.Command {
		fmt.Fprintf(os.Stderr, "singularity-keeper: usage: singularity-keeper %s <runtime pid> <command> [args...]\n", keeper.Command)
		os.Exit(2)
	}
	os.Exit(keeper.Run(os.Args[2:]))
}
