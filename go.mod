module github.com/wisent/singularity

go 1.26.8

require (
	github.com/alecthomas/kong v1.17.0 // indirect
	github.com/asynkron/protoactor-go v0.0.0-20240822202345-3c0e61ca19c9 // indirect
	github.com/ericlagergren/decimal v0.0.0-20190204014639-71cf34b7c2b5 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/lmittmann/tint v1.2.1 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
