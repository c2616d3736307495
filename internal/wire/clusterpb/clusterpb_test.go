package clusterpb_test

import (
	"testing"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/ericlagergren/decimal"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/wisent/singularity/internal/wire/clusterpb"
)

// The messages live beside protoactor-go's cluster package in one
// binary: the protobuf registry panics at init on a second file of one
// name, so importing both is the test; the lookups say each is there.
func TestRegisteredBesideProtoactorCluster(t *testing.T) {
	_ = cluster.Configure // protoactor's cluster messages are linked in
	for _, name := range []string{"singularity_cluster.proto", "cluster.proto"} {
		_, err := protoregistry.GlobalFiles.FindFileByPath(name)
		require.NoError(t, err, name)
	}
}

// A description crosses members byte for byte, its balance an exact
// decimal that a float would not carry.
func TestBeingDescriptionRoundTrip(t *testing.T) {
	const balance = "0.1000000000000000000000000000001"
	sent := &clusterpb.BeingDescription{
		BeingId:  "4f7d1c9e-8a55-4c0b-9a1f-2b3c4d5e6f70",
		Member:   "m2",
		Token:    1 << 40,
		Seq:      812,
		Phase:    "waiting",
		Balance:  balance,
		ParentId: "",
		ChildIds: []string{"a", "b"},
	}
	wire, err := proto.Marshal(sent)
	require.NoError(t, err)
	var got clusterpb.BeingDescription
	require.NoError(t, proto.Unmarshal(wire, &got))
	require.True(t, proto.Equal(sent, &got))

	var d decimal.Big
	_, ok := d.SetString(got.GetBalance())
	require.True(t, ok)
	require.Equal(t, balance, d.String())
}
