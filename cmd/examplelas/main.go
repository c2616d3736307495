// Command examplelas is the example Las: an MCP server over stdio with
// simulated finance, echo and skarbiec surfaces and a chaos surface for
// tests. Its only argument is an optional JSON config file (see
// examplelas.Config); run it as LAS_COMMAND with that file as
// LAS_MCP_ENTRYPOINT.
package main

import (
	"os"

	"github.com/wisent/singularity/world/examplelas"
)

func main() { os.Exit(examplelas.Main(os.Args[1:])) }
