module wload/sdk

go 1.24
