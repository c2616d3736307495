package catalog_test

import (
	"encoding/json"
	"fmt"

	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/tools/catalog"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision/fault"
)

// A being's catalogue: the Las tools in Las order, then the built-ins (the
// Most tools too when a token is configured). Lookup says who serves a
// name; a name not in the catalogue never reaches Las.
func ExampleStandard() {
	las := []chat.Tool{
		chat.NewTool("echo__echo", "Echo the text back.", json.RawMessage(`{"type":"object"}`)),
		chat.NewTool("finance__finance_sell_report", "Sell a report.", json.RawMessage(`{"type":"object"}`)),
	}
	c, err := catalog.Standard(las, catalog.Extras{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("first:", c.Tools()[0].Function.Name, "of", c.Len())
	for _, name := range []string{"echo__echo", "singularity_memory_remember", "echo__shout"} {
		origin, ok := c.Lookup(name)
		fmt.Println(name, origin, ok)
	}
	fmt.Println(catalog.UnknownTool().Envelope())
	// Output:
	// first: echo__echo of 11
	// echo__echo las true
	// singularity_memory_remember builtin true
	// echo__shout unknown false
	// {"chat_id":null,"content":{"message":"tool is not in the current catalog"},"error_code":"unknown_tool","message_id":null,"status":"failed"}
}

// Registration never shadows or guesses: a Las tool that takes a built-in's
// name, a name with a space, or a schema that is not an object fails the
// boot with a tool error (exit 5).
func ExampleBuild() {
	object := json.RawMessage(`{"type":"object"}`)
	for _, las := range [][]chat.Tool{
		{chat.NewTool("singularity_memory_remember", "a Las tool shadowing a built-in", object)},
		{chat.NewTool("read file", "", object)},
		{chat.NewTool("echo__echo", "", json.RawMessage(`[]`))},
	} {
		_, err := catalog.Build(las, builtin.Definitions(), nil)
		fmt.Printf("exit %d: %v\n", fault.ExitCode(err), err)
	}
	// Output:
	// exit 5: tool: duplicate tool: singularity_memory_remember
	// exit 5: tool: invalid tool name: read file
	// exit 5: tool: tool schema is not an object: echo__echo
}
