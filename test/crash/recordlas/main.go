// Command recordlas is the crash test's Las: the example Las (the demo
// world's real MCP server, examplelas.Run) behind a filter that writes
// down every tools/call request it receives, before the server sees it.
// The example Las's own deliveries file records only its chaos__ tools,
// which the scripted family never calls; this records the finance calls
// the family earns with, so the test can tell a call delivered twice.
//
// Its only argument is its configuration file (LAS_MCP_ENTRYPOINT): the
// example Las's configuration plus "record_dir", where each process
// writes its own file las-*.jsonl of one JSON object per call:
//
//	{"tool":"finance__finance_sell_report","arguments":{…},"rpc_id":4,"pid":1234}
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/wisent/singularity/world/examplelas"
)

// Config is the entrypoint file's content.
type Config struct {
	examplelas.Config
	RecordDir string `json:"record_dir"`
}

// Delivery is one tools/call request as it reached this process.
type Delivery struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	RPCID     json.RawMessage `json:"rpc_id"`
	PID       int             `json:"pid"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: recordlas CONFIG")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "recordlas:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return err
	}
	// One file per process: the Las processes of a family never share
	// one.
	rec, err := os.CreateTemp(cfg.RecordDir, "las-*.jsonl")
	if err != nil {
		return err
	}
	defer rec.Close()
	toServer, fromFilter := io.Pipe()
	go filter(os.Stdin, rec, fromFilter)
	err = examplelas.Run(context.Background(), cfg.Config, toServer, os.Stdout)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
		return err
	}
	return nil
}

// filter copies in to out line by line, recording each tools/call
// request first with one write: only the being is ever SIGKILLed, never
// this process, so the line is in the file before the server can act on
// the call.
func filter(in io.Reader, rec *os.File, out *io.PipeWriter) {
	r := bufio.NewReaderSize(in, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if d, ok := toolCall(line); ok {
				b, merr := json.Marshal(d)
				if merr == nil {
					_, merr = rec.Write(append(b, '\n'))
				}
				if merr != nil {
					out.CloseWithError(merr)
					return
				}
			}
			if _, werr := out.Write(line); werr != nil {
				return
			}
		}
		if err != nil {
			out.Close()
			return
		}
	}
}

// toolCall reads a tools/call request line.
func toolCall(line []byte) (Delivery, bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "tools/call" {
		return Delivery{}, false
	}
	return Delivery{Tool: m.Params.Name, Arguments: m.Params.Arguments, RPCID: m.ID, PID: os.Getpid()}, true
}
