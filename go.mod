module github.com/metricproof/metricproof

go 1.26.0

require (
	github.com/cockroachdb/apd/v3 v3.2.3
	github.com/matryer/is v1.4.1
	github.com/rogpeppe/go-internal v1.16.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/spf13/afero v1.15.0
)

require golang.org/x/tools v0.35.0 // indirect

require (
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.28.0 // indirect
)
