package s3store_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/s3store"
	"github.com/metricproof/metricproof/adapters/s3store/s3test"
	"github.com/metricproof/metricproof/ports"
)

// put writes an object as someone other than the program would: with the
// root account, unconditionally.
func put(t *testing.T, srv *s3test.Server, bucket, key, data string) {
	t.Helper()
	_, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader(data)})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// commitObject is the commit object s3store writes for runID naming
// attempt and files.
func commitObject(runID, attempt string, files ...string) string {
	var entries []string
	for _, f := range files {
		entries = append(entries, fmt.Sprintf(`{"name":%q,"bytes":2}`, f))
	}
	return fmt.Sprintf(`{"format":"metricproof.commit/1","run_id":%q,"attempt":%q,"files":[%s]}`+"\n", runID, attempt, strings.Join(entries, ","))
}

const attempt = "0123456789abcdef01234567"

func TestWhatIsFoundInTheBucketIsReportedAsFound(t *testing.T) {
	srv := serve(t, "found")
	all := []string{ports.ResultFile, ports.ReceiptFile, ports.ChecksumsFile}
	// files puts the attempt's files in the output directory dir.
	files := func(t *testing.T, dir string) {
		for _, name := range all {
			put(t, srv, "found", "out/"+dir+"/"+s3store.AttemptPrefix+attempt+"/"+name, "{}")
		}
	}
	store := open(t, "s3://found/out")

	t.Run("an object at a run's name that is not a commit is a run that is not whole", func(t *testing.T) {
		tests := []struct{ name, object string }{
			{"not JSON", "not json\n"},
			{"empty", ""},
			{"another run's commit", commitObject("other", attempt, all...)},
			{"another format", strings.Replace(commitObject("r", attempt, all...), "commit/1", "commit/2", 1)},
			{"an unknown field", strings.Replace(commitObject("r", attempt, all...), `"format"`, `"extra":1,"format"`, 1)},
			{"trailing data", commitObject("r", attempt, all...) + "{}"},
			{"an attempt this package never makes", commitObject("r", "../../elsewhere", all...)},
			{"a file name with a slash", commitObject("r", attempt, "result.json", "../receipt.json")},
			{"a file named twice", commitObject("r", attempt, "result.json", "result.json")},
			{"larger than a commit can be", commitObject("r", attempt, all...) + strings.Repeat(" ", 64<<10)},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				is := is.New(t)
				dir := fmt.Sprintf("bad%d", i)
				files(t, dir)
				put(t, srv, "found", "out/"+dir+"/r", tt.object)
				run, err := store.ReadRun(dir, "r", all, 1024)
				is.NoErr(err)
				is.Equal(run, ports.SavedRun{Exists: true}) // there, and not a whole run: INVALID_SAVED_RESULT
				listed, err := store.ListRuns(dir)
				is.NoErr(err)
				is.Equal(len(listed), 0) // and never listed
			})
		}
	})

	t.Run("a commit naming a file the bucket lacks reads it as missing", func(t *testing.T) {
		is := is.New(t)
		files(t, "lack")
		put(t, srv, "found", "out/lack/r", commitObject("r", "ffffffffffffffffffffffff", all...))
		run, err := store.ReadRun("lack", "r", all, 1024)
		is.NoErr(err)
		is.True(run.Exists && run.Dir)
		for _, f := range run.Files {
			is.True(errors.Is(f.Err, ports.ErrMissing)) // MISSING_RESULT, as a deleted file on disk
		}
	})

	t.Run("a run's file changed after its commit is read as it now is, for verify to judge", func(t *testing.T) {
		is := is.New(t)
		files(t, "changed")
		put(t, srv, "found", "out/changed/r", commitObject("r", attempt, all...))
		put(t, srv, "found", "out/changed/"+s3store.AttemptPrefix+attempt+"/"+ports.ResultFile, `{"tampered":true}`)
		run, err := store.ReadRun("changed", "r", all, 1024)
		is.NoErr(err)
		is.NoErr(run.Files[0].Err)
		is.Equal(string(run.Files[0].Data), `{"tampered":true}`) // the checksums no longer bind it: RESULT_TAMPERED
	})

	t.Run("objects in an output directory that are not commits are not runs", func(t *testing.T) {
		is := is.New(t)
		put(t, srv, "found", "out/mixed/notes.txt", "hello")
		put(t, srv, "found", "out/mixed/big", strings.Repeat("x", 70<<10))
		files(t, "mixed")
		put(t, srv, "found", "out/mixed/r", commitObject("r", attempt, all...))
		put(t, srv, "found", "out/mixed/r1/result.json", "{}") // a run copied from a disk is no commit
		listed, err := store.ListRuns("mixed")
		is.NoErr(err)
		is.Equal(listed, []ports.ListedRun{{Name: "r", ResultBytes: 2}})
	})
}

func TestALedgerIsItsRecordObjectsAsFound(t *testing.T) {
	srv := serve(t, "chain")
	ctx := context.Background()
	scan := func(t *testing.T, store *s3store.Store, rel string) []string {
		t.Helper()
		var lines []string
		if err := store.ScanLedger(ctx, rel, func(l []byte) error { lines = append(lines, string(l)); return nil }); err != nil {
			t.Fatal(err)
		}
		return lines
	}
	record := func(rel string, seq int) string { return fmt.Sprintf("%s/%020d.json", rel, seq) }

	t.Run("a gap is one empty line, and other names under the ledger are not records", func(t *testing.T) {
		is := is.New(t)
		for _, seq := range []int{1, 2, 4} {
			put(t, srv, "chain", record("gap", seq), fmt.Sprintf("r%d\n", seq))
		}
		put(t, srv, "chain", "gap/00000000000000000002.json.bak", "junk\n")
		put(t, srv, "chain", "gap/1", "junk\n")
		put(t, srv, "chain", "gap/notes.txt", "junk\n")
		put(t, srv, "chain", "gap/sub/00000000000000000009.json", "junk\n")
		store := open(t, "s3://chain")
		is.Equal(scan(t, store, "gap"), []string{"r1\n", "r2\n", "", "r4\n"}) // seq 3 missing: no record there
		last, err := store.LastLine(ctx, "gap")
		is.NoErr(err)
		is.Equal(string(last), "r4\n")
	})

	t.Run("a torn, empty or overlong record is handed over as it is, cut at 64 KiB", func(t *testing.T) {
		is := is.New(t)
		long := strings.Repeat("x", 70<<10)
		put(t, srv, "chain", record("odd", 1), "torn")
		put(t, srv, "chain", record("odd", 2), "")
		put(t, srv, "chain", record("odd", 3), long)
		store := open(t, "s3://chain")
		is.Equal(scan(t, store, "odd"), []string{"torn", "", long[:64<<10]})
		var seen []byte
		held, err := store.Lock(ctx, "odd", 0)
		is.NoErr(err)
		is.NoErr(held.Append(func(last []byte) ([]byte, error) { seen = last; return []byte("next\n"), nil }))
		is.Equal(string(seen), long[:64<<10]) // the next record is built from the damaged last as it is: the app refuses it
	})

	t.Run("the last record is found far away without listing the chain", func(t *testing.T) {
		is := is.New(t)
		for seq := 1; seq <= 300; seq++ {
			put(t, srv, "chain", record("long", seq), fmt.Sprintf("r%d\n", seq))
		}
		var requests atomic.Int64
		t.Setenv("AWS_ENDPOINT_URL_S3", srv.Proxy(t, func(*http.Request) s3test.Fault { requests.Add(1); return s3test.Pass }))
		store := open(t, "s3://chain")
		last, err := store.LastLine(ctx, "long")
		is.NoErr(err)
		is.Equal(string(last), "r300\n")
		cold := requests.Load()
		is.True(cold <= 2*9+2) // a gallop and a bisection over 300 seqs, then one read: not 300 reads
		requests.Store(0)
		last, err = store.LastLine(ctx, "long")
		is.NoErr(err)
		is.Equal(string(last), "r300\n")
		is.Equal(requests.Load(), int64(2)) // warm: one listing above the head it knows, one read
		put(t, srv, "chain", record("long", 301), "r301\n")
		last, err = store.LastLine(ctx, "long")
		is.NoErr(err)
		is.Equal(string(last), "r301\n") // a record another server added is seen
		t.Logf("requests to find the last of 300 records: %d cold, 2 warm", cold)
	})
}
