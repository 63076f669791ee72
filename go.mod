module github.com/metricproof/metricproof

go 1.26.8

require (
	github.com/cockroachdb/apd/v3 v3.2.3
	github.com/matryer/is v1.4.1
	github.com/spf13/afero v1.15.0
)

require (
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.28.0 // indirect
)
