package fence

import (
	"encoding/json"
	"fmt"

	"github.com/wisent/singularity/internal/identity"
)

// Root is the prefix of every family's keys.
const Root = "/singularity/"

// keys names the etcd keys of one family (see the package comment).
type keys struct{ prefix string }

func newKeys(family string) keys { return keys{prefix: Root + family + "/"} }

// lockPrefix is the being's mutex prefix (the mutex adds a slash and
// the lease).
func (k keys) lockPrefix(being string) string { return k.prefix + "lock/" + being }

func (k keys) commit(being string) string { return k.prefix + "commit/" + being }

// validName checks a family name or being id for use in a key: an
// immutable identifier, so it holds no slash.
func validName(what, s string) error {
	if !identity.Valid(s) {
		return fmt.Errorf("%s %q is not 1 to 128 ASCII letters, digits or any of \"-_.:\"", what, s)
	}
	return nil
}

// Record is a being's commit record: the last step accepted under Token
// ends with event Seq. The zero Record means nothing was ever
// committed.
type Record struct {
	Token uint64 `json:"token"`
	Seq   uint64 `json:"seq"`
}

func (r Record) encode() string {
	data, _ := json.Marshal(r) // two numbers: cannot fail
	return string(data)
}

func decodeRecord(data []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil || r.Token == 0 {
		return Record{}, fmt.Errorf("a commit record is not {\"token\":T,\"seq\":S} with T above 0: %q", data)
	}
	return r, nil
}
