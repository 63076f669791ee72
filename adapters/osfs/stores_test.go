package osfs_test

import (
	"testing"

	"github.com/metricproof/metricproof/adapters/porttest"
	"github.com/metricproof/metricproof/ports"
)

// The promises every store keeps, on a disk (s3store keeps them in object
// storage).
func TestRunsContract(t *testing.T) {
	porttest.Runs(t, func(t *testing.T) ports.EvidenceStore { return newSubject(t, nil).Evidence })
}

func TestRecordsContract(t *testing.T) {
	porttest.Records(t, func(t *testing.T) ports.LedgerStore { return newSubject(t, nil).Ledger })
}
