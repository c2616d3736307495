package fence

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

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

// ReadRecords reads every commit record of family in one request, by
// being id, without a session: a reader (`singularity status`) takes no
// lease and writes nothing.
func ReadRecords(ctx context.Context, client *clientv3.Client, family string) (map[string]Record, error) {
	if err := validName("the family name", family); err != nil {
		return nil, err
	}
	prefix := newKeys(family).commit("")
	resp, err := client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cannot read the commit records of family %s: %w", family, err)
	}
	out := make(map[string]Record, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		r, err := decodeRecord(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kv.Key, err)
		}
		out[strings.TrimPrefix(string(kv.Key), prefix)] = r
	}
	return out, nil
}
