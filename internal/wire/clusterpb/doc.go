// Package clusterpb holds the protobuf messages members of one family
// send each other over protoactor-go's remote. The Go code is generated
// from singularity_cluster.proto by `make proto` (Debian's protoc and
// protoc-gen-go) and committed, so building needs no protoc.
package clusterpb

// ProtocolVersion is the version of these messages this build speaks. A
// member refuses to join a family whose live members speak another one.
const ProtocolVersion uint32 = 4
