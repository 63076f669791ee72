package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/s3store"
	"github.com/metricproof/metricproof/app/ledger"
	"github.com/metricproof/metricproof/ports"
)

// Two stores are two clients, as two servers behind a load balancer hold:
// nothing in this process (no lock, no cache) is shared between them.

func TestTwoStoresCommittingOneRunIDTwentyTimesCommitExactlyOnceEachTime(t *testing.T) {
	serve(t, "race")
	stores := []*s3store.Store{open(t, "s3://race/out"), open(t, "s3://race/out")}
	names := []string{ports.ResultFile, ports.ReceiptFile, ports.ChecksumsFile}
	wins := make([]int, len(stores))
	for round := range 20 {
		is := is.New(t)
		runID := fmt.Sprintf("r%02d", round)
		// Each writer checks and stages as analyze does; then both
		// commit at once.
		writers := make([]ports.EvidenceWriter, len(stores))
		for i, store := range stores {
			w, err := store.OpenWriter(".")
			is.NoErr(err)
			exists, err := w.Exists(runID)
			is.NoErr(err)
			is.True(!exists) // neither has committed yet
			is.NoErr(w.Stage(runFiles(fmt.Sprint(i))))
			writers[i] = w
		}
		errs := make([]error, len(stores))
		var wg sync.WaitGroup
		for i, w := range writers {
			wg.Go(func() { errs[i] = w.Commit(runID) })
		}
		wg.Wait()
		for _, w := range writers {
			is.NoErr(w.Close())
		}
		winner := -1
		for i, err := range errs {
			if err == nil {
				is.Equal(winner, -1) // two commits of one run ID
				winner = i
				continue
			}
			is.True(errors.Is(err, ports.ErrExists)) // the loser is told the run exists
		}
		is.True(winner >= 0) // one committed
		wins[winner]++
		for _, store := range stores {
			run, err := store.ReadRun(".", runID, names, 1024)
			is.NoErr(err)
			is.True(run.Exists && run.Dir && !run.Extra)
			for j, f := range run.Files {
				is.NoErr(f.Err)
				is.Equal(string(f.Data), string(runFiles(fmt.Sprint(winner))[j].Data)) // the winner's files, whole
			}
		}
	}
	for _, store := range stores {
		is := is.New(t)
		listed, err := store.ListRuns(".")
		is.NoErr(err)
		is.Equal(len(listed), 20) // each run once, and nothing else
	}
	t.Logf("commits won by each store: %v", wins)
}

// runFiles are a run's three files, their bytes tagged.
func runFiles(tag string) []ports.File {
	return []ports.File{
		{Name: ports.ResultFile, Data: []byte(`{"result":"` + tag + "\"}\n")},
		{Name: ports.ReceiptFile, Data: []byte(`{"receipt":"` + tag + "\"}\n")},
		{Name: ports.ChecksumsFile, Data: []byte(`{"checksums":"` + tag + "\"}\n")},
	}
}

func TestAppendersOnTwoStoresMakeOneChainThatVerifiesWithEveryRecordOnce(t *testing.T) {
	is := is.New(t)
	serve(t, "chain")
	stores := []*s3store.Store{open(t, "s3://chain/audit"), open(t, "s3://chain/audit")}
	rules := ledger.Rules{Transports: []string{"stdio", "mcp"}}
	const perStore, each = 6, 5
	var builds atomic.Int64
	var mu sync.Mutex
	landed := map[string]int{}
	var wg sync.WaitGroup
	for s, store := range stores {
		for g := range perStore {
			wg.Go(func() {
				for i := range each {
					id := fmt.Sprintf("c-%d-%d-%d", s, g, i)
					held, err := store.Lock(context.Background(), "ledger", 30*time.Second)
					if err != nil {
						t.Error(err)
						return
					}
					err = held.Append(func(last []byte) ([]byte, error) {
						builds.Add(1)
						rec := record(id)
						if err := rules.Link(&rec, last); err != nil {
							return nil, err
						}
						return ledger.Encode(rec)
					})
					held.Release()
					if err != nil {
						t.Errorf("append %s: %v", id, err)
						continue
					}
					mu.Lock()
					landed[id]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()

	chain := rules.Chain()
	seen := map[string]int{}
	reader := open(t, "s3://chain/audit")
	is.NoErr(reader.ScanLedger(context.Background(), "ledger", func(line []byte) error {
		r, err := chain.Add(line)
		if err == nil {
			seen[*r.RequestID]++
		}
		return err
	}))
	is.Equal(chain.Records, int64(len(stores)*perStore*each)) // every append, and nothing else
	is.Equal(seen, landed)                                    // each appended record exactly once
	last, err := reader.LastLine(context.Background(), "ledger")
	is.NoErr(err)
	r, err := rules.Parse(last)
	is.NoErr(err)
	is.Equal(r.Seq, chain.Records) // the last line is the head
	t.Logf("%d records from %d appenders on 2 stores; the record was built %d times (a loser of a race builds it again)", chain.Records, 2*perStore, builds.Load())
}

// record is a well-formed record of a successful inspect_inputs with the
// request ID id, not yet linked.
func record(id string) ledger.Record {
	tool, digest := "inspect_inputs", strings.Repeat("ab", 32)
	return ledger.Record{
		Time:           time.Now().UTC().Format(time.RFC3339Nano),
		Transport:      "mcp",
		RequestID:      &id,
		Tool:           &tool,
		InputSHA256:    &digest,
		Status:         "success",
		ResponseSHA256: digest,
		EngineSHA256:   digest,
	}
}

// A record whose first try is held on the way (a slow hop) and reaches the
// store only after its writer gave up on that try and others appended:
// the late write meets a seq that is taken and changes nothing, so no
// record is lost, doubled or forked, whatever the writer was told.
func TestARecordThatArrivesLateNeverForksTheChain(t *testing.T) {
	is := is.New(t)
	srv := serve(t, "late")
	rules := ledger.Rules{Transports: []string{"stdio", "mcp"}}
	appendRec := func(store *s3store.Store, id string) error {
		held, err := store.Lock(context.Background(), "ledger", 30*time.Second)
		if err != nil {
			return err
		}
		defer held.Release()
		return held.Append(func(last []byte) ([]byte, error) {
			rec := record(id)
			if err := rules.Link(&rec, last); err != nil {
				return nil, err
			}
			return ledger.Encode(rec)
		})
	}
	direct := open(t, "s3://late/p")
	is.NoErr(appendRec(direct, "first"))

	release := make(chan struct{})
	landed := make(chan struct{})
	var once sync.Once
	var heldOne atomic.Bool
	target := srv.Endpoint
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held := false
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/00000000000000000002.json") {
			once.Do(func() { held = true; heldOne.Store(true) })
		}
		if !held {
			proxyTo(t, target, w, r)
			return
		}
		// The first PUT: say nothing to the writer, and pass it on only
		// when released, long after the writer's try ran out.
		body, _ := io.ReadAll(r.Body)
		go func() {
			<-release
			req, _ := http.NewRequest(r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
			req.Header = r.Header.Clone()
			req.Host = r.Host
			req.ContentLength = int64(len(body))
			if res, err := http.DefaultTransport.RoundTrip(req); err == nil {
				t.Logf("the late write was answered %d", res.StatusCode)
				res.Body.Close()
			}
			close(landed)
		}()
		<-r.Context().Done()
	}))
	t.Cleanup(hold.Close)
	t.Setenv("AWS_ENDPOINT_URL_S3", hold.URL)
	slow := open(t, "s3://late/p")
	s3store.SetTimeout(slow, 300*time.Millisecond)

	outcome := map[string]error{}
	outcome["slow"] = appendRec(slow, "slow") // its first try of seq 2 is held; a retry lands
	for i := range 5 {
		id := fmt.Sprintf("after-%d", i)
		outcome[id] = appendRec(direct, id)
	}
	close(release)
	if !heldOne.Load() {
		// Each of the slow store's requests has 300 ms; one before its
		// write ran out, so there is no late write to wait for.
		t.Fatal("the slow store never reached its write of record 2 (a request before it ran out of time: a very busy machine); run again")
	}
	<-landed
	is.NoErr(appendRec(direct, "last")) // the ledger takes records after the late write
	outcome["last"] = nil

	chain := rules.Chain()
	seen := map[string]int{}
	is.NoErr(open(t, "s3://late/p").ScanLedger(context.Background(), "ledger", func(line []byte) error {
		r, err := chain.Add(line)
		if err == nil {
			seen[*r.RequestID]++
		}
		return err
	}))
	for id, err := range outcome {
		switch {
		case err == nil:
			is.Equal(seen[id], 1) // a record said to land is there once
		case errors.Is(err, ports.ErrRecordRemains):
			is.True(seen[id] <= 1) // a record that may remain is there at most once
		default:
			is.Equal(seen[id], 0) // a record said not to land is not there
		}
	}
	is.Equal(chain.Records, int64(len(seen))) // nothing else, nothing twice
	t.Logf("outcomes %v; records %v", outcome, seen)
}

// proxyTo hands r to the server at target and its answer back.
func proxyTo(t *testing.T, target string, w http.ResponseWriter, r *http.Request) {
	u, err := url.Parse(target)
	if err != nil {
		t.Error(err)
		return
	}
	httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
}
