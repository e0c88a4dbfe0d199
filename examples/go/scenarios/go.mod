module wload/examples/scenarios

go 1.24

require wload/sdk v0.0.0

replace wload/sdk => ../../../sdk/go
