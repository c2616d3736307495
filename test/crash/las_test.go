package crash

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wisent/singularity/world/examplelas"
)

// lasConfig is the entrypoint file of the recording Las (recordlas): the
// example Las's own configuration plus the directory the deliveries go
// to.
type lasConfig struct {
	examplelas.Config
	RecordDir string `json:"record_dir"`
}

// examplelasConfig is the example Las the family gets: the surfaces of
// the demo world.
func examplelasConfig() examplelas.Config {
	return examplelas.Config{Surfaces: []string{examplelas.SurfaceFinance, examplelas.SurfaceEcho, examplelas.SurfaceSkarbiec}}
}

// delivery is one tools/call request as it reached a Las process, as
// recordlas writes it.
type delivery struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	RPCID     json.RawMessage `json:"rpc_id"`
	PID       int             `json:"pid"`
}

// key identifies the call the model made: the being and the cycle are in
// the scripted arguments ("simulated item from Bo, cycle 7"), so the
// same key twice is the same call delivered twice.
func (d delivery) key() string {
	var args bytes.Buffer
	if json.Compact(&args, d.Arguments) != nil {
		args.Reset()
		args.Write(d.Arguments)
	}
	return d.Tool + " " + args.String()
}

// deliveryLog reads the record directory incrementally: each call of
// next returns the complete lines written since the last call.
type deliveryLog struct {
	dir    string
	offset map[string]int64
}

func newDeliveryLog(dir string) *deliveryLog {
	return &deliveryLog{dir: dir, offset: map[string]int64{}}
}

func (l *deliveryLog) next() ([]delivery, error) {
	names, err := filepath.Glob(filepath.Join(l.dir, "las-*.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []delivery
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		start := l.offset[name]
		if start > int64(len(data)) {
			return nil, fmt.Errorf("%s shrank", name)
		}
		rest := data[start:]
		// A Las still running (one of a killed being's, reading its
		// last lines before EOF) may be writing: only whole lines.
		end := bytes.LastIndexByte(rest, '\n') + 1
		for _, line := range strings.Split(string(rest[:end]), "\n") {
			if line == "" {
				continue
			}
			var d delivery
			if err := json.Unmarshal([]byte(line), &d); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out = append(out, d)
		}
		l.offset[name] = start + int64(end)
	}
	return out, nil
}
